// Package naming holds the names that lockmux writes on the nodes, which
// redlock, doctor and inspect must spell alike.
//
// # Concurrency
//
// All is safe for concurrent use.
//
// # Errors
//
// Building a name cannot fail.
package naming
