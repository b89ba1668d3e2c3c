// Package trustednodes gives the examples, the command line's own servers
// and the tests outside redlock nodes that the quarantine lets vote at
// once: in-process miniredis servers that answer its INFO sections
// (package miniinfo), or servers just started, each stated new with
// Client.TrustNodes, since nothing locked on them before.
package trustednodes
