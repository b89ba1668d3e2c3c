// Package connection turns the fields of redlock.Options that configure
// the connections to the nodes into mux.Options, and holds the rules
// those fields must follow. redlock.New and the operations tools (through
// redlock/internal/transport) both use it, so a Client and a tool reach
// the nodes alike and refuse the same options.
//
// # Concurrency
//
// It holds plain values and pure functions: all are safe for concurrent
// use.
//
// # Errors
//
// A check's error names the field, as in "Options.DialTimeout -1s is
// negative"; the callers wrap it with redlock.ErrInvalidOptions.
package connection
