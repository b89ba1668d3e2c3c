package conn

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned for calls on a Conn that was closed.
	ErrClosed = errors.New("conn: closed")

	// ErrNotConnected is reported for a call that was not sent because the
	// connection is down or being re-established. The command never reached
	// the server.
	ErrNotConnected = errors.New("conn: not connected")

	// ErrAuth is matched by handshake failures caused by rejected
	// credentials or missing permissions (NOAUTH, WRONGPASS, NOPERM). They
	// are configuration errors: retrying does not help.
	ErrAuth = errors.New("conn: authentication failed")

	// ErrInvalidAddress is matched by errors of ParseAddress and New for an
	// address that cannot be used.
	ErrInvalidAddress = errors.New("conn: invalid address")

	// ErrInvalidOptions is matched by errors of New for options that cannot
	// be used.
	ErrInvalidOptions = errors.New("conn: invalid options")

	// ErrUnfinished is matched by the error of Close when carried commands
	// (Call.Carry) could not be finished; Options.OnUnfinished has each.
	ErrUnfinished = errors.New("conn: carried commands unfinished")

	// ErrNotMaster is matched when the server of a master that Redis
	// Sentinel serves is not, or is no longer, the master: the sentinels'
	// answer was stale, they moved the master, or the server answered
	// READONLY. The connection is closed, and the next dial asks the
	// sentinels again.
	ErrNotMaster = errors.New("conn: not the master")

	// ErrUnexpectedReply is matched when a server answers the handshake or a
	// reply arrives that no command asked for. The connection is closed.
	ErrUnexpectedReply = errors.New("conn: unexpected reply")
)

// nodeError prefixes err with the server's address so that every transport
// failure names the node it came from.
func nodeError(address string, err error) error {
	return fmt.Errorf("conn: %s: %w", address, err)
}
