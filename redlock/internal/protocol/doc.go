// Package protocol holds what a lock says to a node: the Lua scripts
// (scripts/*.lua, documented in their headers) and their reply readers.
// It does no I/O and keeps no state.
//
// # Concurrency
//
// Everything here is immutable after init and safe for concurrent use.
//
// # Errors
//
// A reader reports an impossible reply by ok = false. IsFenceError tells
// a fencing script's refusal of a counter.
package protocol
