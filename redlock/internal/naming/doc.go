// Package naming holds the names that lockmux writes on the nodes and that
// more than one package must spell alike: redlock, which writes them, and
// the operations tools under it (doctor, inspect), which read them or tell
// a user how to allow them. Each name is defined here and nowhere else.
//
// # Concurrency
//
// It holds constants, and functions that only build names from their
// arguments: all are safe for concurrent use.
//
// # Errors
//
// Building a name cannot fail.
package naming
