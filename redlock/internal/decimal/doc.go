// Package decimal holds the Lua prelude of the scripts that compare
// fencing counters and fences as decimal strings: the lock's fenced
// acquisition and fence commit, and fencedstore's fenced write. Lua numbers
// are doubles, exact only up to 2^53, so these scripts never convert a
// counter to a number.
//
// # Concurrency
//
// There is nothing to call: the package holds one string.
//
// # Errors
//
// There is nothing to call, so nothing fails.
package decimal
