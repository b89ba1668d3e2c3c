package main

import (
	"context"
	"errors"

	"github.com/lockmux/lockmux/redlock"
)

// The exit statuses of redlock. "redlock run" otherwise exits with its
// command's own status, or 128+N when the command was killed by signal N,
// as shells report it. The numbers follow sysexits.h where one fits, and
// the conventions of env, timeout and nohup for a command that cannot run.
const (
	// exitOK: success; a check passed.
	exitOK = 0
	// exitFailed: a check did not pass: doctor found a failing node or was
	// cut short, status found no quorum holding the key, scan found keys
	// without a TTL, the demo saw a violation, or bench could not complete a
	// cycle.
	exitFailed = 1
	// exitUsage: bad usage or configuration (EX_USAGE): unknown flags,
	// missing arguments, no addresses, invalid addresses or options, a node
	// that rejects the credentials or the commands (ErrConfig), two
	// addresses of one server.
	exitUsage = 64
	// exitUnavailable: too few nodes answered for a quorum
	// (EX_UNAVAILABLE).
	exitUnavailable = 69
	// exitNotAcquired: the lock was not acquired within --wait; another
	// holder has it (EX_TEMPFAIL: try again later).
	exitNotAcquired = 75
	// exitLost: the lock was lost while the command ran, and the command
	// was stopped.
	exitLost = 79
	// exitCannotRun: the command was found but could not be started.
	exitCannotRun = 126
	// exitNotFound: the command was not found.
	exitNotFound = 127
	// exitSignalBase plus a signal's number is the status of a command
	// killed by that signal, and of redlock itself when a signal ended it
	// before the command started (130 for SIGINT, 143 for SIGTERM).
	exitSignalBase = 128
)

// exitStatusTable is the table of exit statuses that the help shows.
const exitStatusTable = `Exit statuses:
  0    success (run, elect: the command's own status, or 128+N if signal N
       killed it)
  1    a check failed: doctor found a failing node or was cut short, status
       found no quorum holding the key, scan found keys without a TTL, the
       demo saw a violation
  64   bad usage or configuration (flags, addresses, credentials, a node that
       refuses the lock commands, two addresses of one server)
  69   too few nodes answered for a quorum
  75   run: the lock was not acquired within --wait
  79   run: the lock was lost while the command ran; the command was stopped
  126  run: the command could not be started
  127  run: the command was not found
  130  interrupted (128+SIGINT) before the command started; 143 for SIGTERM
`

// statusOf maps an error of the library to an exit status: configuration
// problems, an unreachable quorum, a lock not acquired, or a failure.
func statusOf(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, redlock.ErrInvalidOptions), errors.Is(err, redlock.ErrConfig), errors.Is(err, redlock.ErrDuplicateNode):
		return exitUsage
	case errors.Is(err, redlock.ErrQuorumUnreachable):
		return exitUnavailable
	case errors.Is(err, redlock.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded):
		return exitNotAcquired
	}
	return exitFailed
}
