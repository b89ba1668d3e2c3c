package redlock

import (
	"fmt"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/round"
)

// keptFailure is the failure of an attempt that an acquisition which
// waits keeps, so that it makes the error only if it returns it: an
// attempt that fails and is retried allocates nothing.
type keptFailure struct {
	cause   error       // the failure, or nil when it is the tally's
	tally   round.Tally // the failed round's tally, while cause is nil
	key     string
	elapsed time.Duration
}

// errFailureKept is returned in place of an attempt's failure when the
// failure was kept (keptFailure): the caller makes the error from it
// when it returns one. It never reaches a user.
var errFailureKept = fmt.Errorf("%w: the failure is kept", ErrNotAcquired)

// keep keeps the failure of m's attempt, whose details are in its
// acquisition round's tally, which the caller reads with m's turn.
func (f *keptFailure) keep(m *Mutex, elapsed time.Duration) {
	f.cause, f.key, f.elapsed = nil, m.key, elapsed
	f.tally.CopyFrom(&m.acquisitionRound().Tally)
}

// err returns the failure kept.
func (f *keptFailure) err(addresses []string) error {
	if f.cause != nil {
		return f.cause
	}
	return quorumError(&f.tally, f.key, addresses, f.elapsed)
}
