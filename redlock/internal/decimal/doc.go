// Package decimal holds the Lua prelude of the scripts that compare fences
// as decimal strings: Lua numbers are exact only up to 2^53.
//
// # Concurrency
//
// The package holds one string.
//
// # Errors
//
// Nothing fails.
package decimal
