// Package transport makes the connections of the tools under redlock
// (doctor, inspect, fencedstore) from a user's redlock.Options, as a
// redlock.Client makes its own. It lives apart so that redlock exports
// nothing of its transport.
//
// # Concurrency
//
// GroupOptions and NewGroup are safe for concurrent use; the caller closes
// the returned mux.Group.
//
// # Errors
//
// Invalid options or addresses give an error matching
// redlock.ErrInvalidOptions that names the field or address.
package transport
