package waiting

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// scriptedAttempts ends its attempts as outcomes says, in order, and
// records what Retry asked of it.
type scriptedAttempts struct {
	outcomes []Outcome
	cancel   context.CancelFunc // called by the attempt numbered cancelAt
	cancelAt int
	numbers  []int // the attempts made
	waits    int   // the calls of BeforeWait
	stopped  int   // the number given to Stop
	cause    error // the cause given to Stop
}

var errForGood = errors.New("for good")

func (s *scriptedAttempts) Attempt(_ context.Context, number int) (Outcome, Failure) {
	s.numbers = append(s.numbers, number)
	if number == s.cancelAt {
		s.cancel()
	}
	if len(s.numbers) > len(s.outcomes) {
		return Aborted, Failure{Err: errors.New("an attempt past the script")}
	}
	outcome := s.outcomes[len(s.numbers)-1]
	if outcome == FailedForGood || outcome == Aborted {
		return outcome, Failure{Err: errForGood}
	}
	return outcome, Failure{}
}

func (s *scriptedAttempts) BeforeWait(context.Context, Failure) error {
	s.waits++
	return nil
}

func (s *scriptedAttempts) Stop(number int, cause error, _ Failure) error {
	s.stopped, s.cause = number, cause
	return errStopped
}

var errStopped = errors.New("stopped")

// The retry rule: MaxTries counts every attempt, one retried at once
// included, but only a Failed attempt is followed by a wait; ctx ends
// the loop before a wait; an attempt that won or failed for good ends it.
func TestRetryFollowsTheRule(t *testing.T) {
	tests := []struct {
		name     string
		outcomes []Outcome
		number   int // the first attempt Retry makes
		maxTries int
		cancelAt int
		err      error
		numbers  []int
		waits    int
		stopped  int
		cause    error
	}{
		{name: "won at once", outcomes: []Outcome{Won}, number: 1, numbers: []int{1}},
		{name: "won after waits", outcomes: []Outcome{Failed, Failed, Won}, number: 1, numbers: []int{1, 2, 3}, waits: 2},
		{name: "retried at once", outcomes: []Outcome{Failed, FailedRetryNow, Failed}, number: 1, maxTries: 3, err: errStopped,
			numbers: []int{1, 2, 3}, waits: 1, stopped: 3},
		{name: "failed for good", outcomes: []Outcome{Failed, FailedForGood}, number: 1, err: errForGood, numbers: []int{1, 2}, waits: 1},
		{name: "aborted", outcomes: []Outcome{Aborted}, number: 1, err: errForGood, numbers: []int{1}},
		{name: "the caller's attempt counts", number: 2, maxTries: 1, err: errStopped, stopped: 1},
		{name: "a wait follows the caller's attempt", outcomes: []Outcome{Won}, number: 2, maxTries: 2, numbers: []int{2}, waits: 1},
		{name: "ctx ended", outcomes: []Outcome{Failed, Failed}, number: 1, cancelAt: 2, err: errStopped,
			numbers: []int{1, 2}, waits: 1, stopped: 2, cause: context.Canceled},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			attempts := &scriptedAttempts{outcomes: test.outcomes, cancel: cancel, cancelAt: test.cancelAt}
			w := handLock(handRoom(1, 1), KindPlain, "k")
			err := w.Retry(ctx, Rule{MaxTries: test.maxTries}, attempts, test.number, Failure{})
			assert.Equal(t, test.err, err)
			assert.Equal(t, test.numbers, attempts.numbers)
			assert.Equal(t, test.waits, attempts.waits, "waits")
			assert.Equal(t, test.stopped, attempts.stopped, "the attempt Stop was told of")
			assert.Equal(t, test.cause, attempts.cause)
		})
	}
}
