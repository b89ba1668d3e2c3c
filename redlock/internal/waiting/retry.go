package waiting

import (
	"context"
	"math/rand/v2"
	"time"
)

// Rule says when a Lock or an Acquire tries again.
type Rule struct {
	MaxTries           int           // the most attempts; 0 for no limit
	DelayMin, DelayMax time.Duration // the range of the retry delay
	Backoff            bool          // the delay's bound doubles with each attempt
}

// Delay draws the retry delay after failed attempt number (from 1):
// uniformly from [DelayMin, DelayMax], so that competing clients fall out
// of step. With Backoff it draws from [b/2, b], where b doubles with each
// attempt from DelayMin up to DelayMax.
func (r Rule) Delay(number int) time.Duration {
	low, high := r.DelayMin, r.DelayMax
	if r.Backoff {
		bound := low
		for i := 1; i < number && bound < high; i++ {
			bound *= 2
		}
		low, high = min(bound, high)/2, min(bound, high)
	}
	if high <= low {
		return low
	}
	return low + rand.N(high-low+1)
}

// Outcome is how one attempt ended (Attempts.Attempt).
type Outcome uint8

const (
	// Won: Retry returns nil.
	Won Outcome = iota
	// Failed: retrying may fix it. Retry waits as the Failure says.
	Failed
	// FailedRetryNow: Retry makes the next attempt at once, with no wait.
	FailedRetryNow
	// FailedForGood: Retry returns the attempt's error (Failure.Err).
	FailedForGood
	// Aborted: the attempt reached no verdict (ctx ended, Client closed).
	// Retry returns its error and passes on the wake-ups it answered.
	Aborted
)

// Failure is what a failed attempt found. It decides how Retry waits.
type Failure struct {
	Held       bool          // somebody holds what it asked: listen for the release
	Split      bool          // it won a part of what it needed
	Backoff    bool          // back off at random unless a release comes
	RefusedFor time.Duration // bounds a wait for a release, when not 0
	Err        error         // the attempt's error, or nil when Stop makes it
}

// Attempts are the attempts of one Lock or Acquire, as Retry makes them.
type Attempts interface {
	// Attempt makes attempt number (from 1) and says how it ended.
	Attempt(ctx context.Context, number int) (Outcome, Failure)
	// BeforeWait runs after a failed attempt when a wait follows. Its
	// error ends Retry with it.
	BeforeWait(ctx context.Context, failure Failure) error
	// Stop returns Retry's error after failed attempt number: cause is
	// the context's when it ended, nil when MaxTries attempts failed.
	Stop(number int, cause error, failure Failure) error
}

// Retry makes attempts until one wins or fails for good, MaxTries failed,
// or ctx ends. Close ends a wait, and the next attempt then fails. The
// caller made the attempts before number, the last failing as failure,
// or as FailedRetryNow after RetryAtOnce. Retry unregisters w from the
// notifier as it returns.
func (w *Waiter) Retry(ctx context.Context, rule Rule, attempts Attempts, number int, failure Failure) error {
	won := false
	defer func() { w.StopWaiting(won) }()
	waitFirst := number > 1 && !w.retriedNow
	for ; ; number++ {
		if waitFirst {
			failed := number - 1
			if ctx.Err() != nil {
				return attempts.Stop(failed, context.Cause(ctx), failure)
			}
			if rule.MaxTries > 0 && failed >= rule.MaxTries {
				return attempts.Stop(failed, nil, failure)
			}
			if err := attempts.BeforeWait(ctx, failure); err != nil {
				return err
			}
			if err := w.waitToRetry(ctx, rule.Delay(failed), failure); err != nil {
				return attempts.Stop(failed, err, failure)
			}
		}
		w.beforeAttempt()
		var outcome Outcome
		outcome, failure = attempts.Attempt(ctx, number)
		switch outcome {
		case Won:
			won = true
			return nil
		case Aborted:
			return failure.Err
		}
		w.afterFailedAttempt()
		if outcome == FailedForGood {
			return failure.Err
		}
		waitFirst = outcome == Failed
		w.retriedNow = w.retriedNow || outcome == FailedRetryNow
	}
}

// RetriedNow reports whether the Retry under way made an attempt at once
// after a failed one (FailedRetryNow).
func (w *Waiter) RetriedNow() bool { return w.retriedNow }

// RetryAtOnce tells the next Retry that the caller's attempt ended as
// FailedRetryNow: it makes the next attempt without waiting.
func (w *Waiter) RetryAtOnce() { w.retriedNow = true }

// InLine reports whether w has a place in a fair lock's line. The
// goroutine that has the turn reads it without the notifier's mutex: it
// alone writes it.
func (w *Waiter) InLine() bool { return w.lined }

// beforeAttempt readies the wait for an attempt: the attempt answers the
// wake-ups that came before it.
func (w *Waiter) beforeAttempt() {
	if w.subscribed {
		w.answered = w.startAttempt()
	} else {
		w.unheardBefore = w.notifier.unheard.Load()
	}
}

// afterFailedAttempt takes the release wake-ups the failed attempt
// answered: they are not passed on.
func (w *Waiter) afterFailedAttempt() {
	if w.subscribed {
		w.releaseWakes.Add(-w.answered)
	}
}

// waitToRetry waits the retry delay d after a failed attempt, as failure
// says.
func (w *Waiter) waitToRetry(ctx context.Context, d time.Duration, failure Failure) error {
	if failure.Held && !w.subscribed {
		w.startAttempt() // forget the wake-ups that came after an earlier wait's last attempt
		w.subscribed = w.notifier.register(w)
	}
	mode := waitDeaf
	if w.subscribed {
		switch {
		case failure.Backoff:
			mode = waitBackoff
		case failure.Held:
			mode = waitRelease
		}
	}
	w.split = failure.Split
	return w.sleep(ctx, d, mode, failure.RefusedFor)
}

// StopWaiting unregisters w from the notifier, if it registered, as its
// Lock or Acquire returns or wins.
func (w *Waiter) StopWaiting(acquired bool) {
	if w.subscribed {
		w.notifier.unregister(w, acquired)
		w.subscribed = false
	}
}
