// Package connection turns the connection fields of redlock.Options into
// mux.Options and checks them, for redlock.New and the tools alike.
//
// # Concurrency
//
// All is safe for concurrent use.
//
// # Errors
//
// A check's error names the field; callers wrap it with
// redlock.ErrInvalidOptions.
package connection
