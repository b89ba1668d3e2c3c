// Package protocol holds what a lock says to a node: the Lua scripts
// (scripts/*.lua, each documented in its own header) and the readers of
// their replies. It does no I/O and keeps no state.
//
// # Concurrency
//
// Everything here is immutable after init and safe for concurrent use.
//
// # Errors
//
// A reader reports a reply its script never gives by ok = false;
// IsFenceError tells a fencing script's refusal of a counter.
package protocol
