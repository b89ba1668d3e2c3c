package redistest

import "errors"

// The helpers of this package report failures on the testing.TB they were
// given; these errors only travel between its internal functions and end up
// in those failure messages.
var (
	// errAddressInUse means redis-server could not bind its port because
	// another process took it between the probe and the start.
	errAddressInUse = errors.New("redistest: address already in use")
	// errExited means redis-server exited before it answered PING.
	errExited = errors.New("redistest: redis-server exited during start-up")
	// errNotReady means redis-server did not answer PING with PONG in time.
	errNotReady = errors.New("redistest: redis-server not ready")
	// errEmptyACLUser means an entry of Options.ACLUsers holds no user name.
	errEmptyACLUser = errors.New("redistest: empty ACL user rule")
	// errStateUnknown means the platform cannot tell whether a process is
	// stopped; Stop and Cont then return right after signalling.
	errStateUnknown = errors.New("redistest: process state unknown on this platform")
	// errMalformedCommand means a client sent the fake server something other
	// than an array of bulk strings.
	errMalformedCommand = errors.New("redistest: malformed command")
	// errMalformedReply means a server sent Do a reply it could not read.
	errMalformedReply = errors.New("redistest: malformed reply")
)
