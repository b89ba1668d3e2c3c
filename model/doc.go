// Package model holds the Promela models of lockmux's protocols and the
// test that checks them with SPIN: every safety property exhaustively,
// within the bounds model/README.md states, and every unsafe switch,
// which must give a counterexample. It has no code of its own.
package model
