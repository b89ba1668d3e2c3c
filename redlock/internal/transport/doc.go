// Package transport makes the connections of the operations tools under
// redlock (doctor, inspect, fencedstore) from the redlock.Options a user
// gives them: the same credentials, TLS configuration, dial timeout, client
// name and protocol as a redlock.Client's connections, over mux.
//
// It lives apart from redlock so that redlock exports nothing of its
// transport: redlock cannot import the tools (they import it), and the
// tools cannot see its unexported names. It copies the exported fields of
// redlock.Options into redlock/internal/connection, whose checks and
// conversion redlock.New uses too; a test holds the copy to redlock.New's,
// field by field.
//
// # Concurrency
//
// GroupOptions and NewGroup are safe for concurrent use; the mux.Group
// that NewGroup returns is too, and its owner closes it.
//
// # Errors
//
// Options that redlock.New would refuse, no addresses, and an address that
// cannot be parsed give an error that matches redlock.ErrInvalidOptions and
// names the field or the address.
package transport
