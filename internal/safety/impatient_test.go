//go:build linux

package safety_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/safety"
	"github.com/lockmux/lockmux/redlock"
)

// Callers with short contexts (RELIABILITY.md §6 F32): in phase A the
// impatient workers make some of their Lock, TryLock, Extend and Unlock
// calls with a context that ends after 200 µs – 2 ms, by its deadline or
// by a cancellation, and so abandon calls on connections that the other
// goroutines of their Client share. A context bounds how long its caller
// waits, never the shared connection (STYLE.md, Context), and errors
// caused by the context match the context's error: runChaos counts the
// calls whose context ended them, and fails on those whose error does
// not match.
const (
	// shortChance is the probability that a call of an impatient worker
	// in phase A gets a short context.
	shortChance = 0.5
	// shortMin and shortMax bound the life of a short context: well
	// below the node timeout of 50 ms, around a round trip through the
	// proxies.
	shortMin, shortMax = 200 * time.Microsecond, 2 * time.Millisecond
	// tryChance is the probability that an impatient worker in phase A
	// acquires with TryLock rather than Lock.
	tryChance = 0.5
	// extendChance is the probability that an impatient worker in phase
	// A extends its hold in the middle of a short critical section.
	extendChance = 0.3
)

// impatientNow reports whether w's calls may now get short contexts.
func (w *worker) impatientNow() bool {
	return w.impatient && w.phase == safety.PhaseRun
}

// shortContext is the context one call of a worker gets: the worker's
// usual one, or a short one that ends after life.
type shortContext struct {
	kind shortKind
	life time.Duration
}

// shortKind is how a short context ends.
type shortKind int

const (
	usualContext      shortKind = iota // no short context: the worker's usual timeout
	shortDeadline                      // a deadline after life
	shortCancel                        // cancelled by a timer after life
	shortCancelAtOnce                  // cancelled right after the call starts
)

// nextContext draws the context of w's next call from w's seeded rng: a
// short one for an impatient worker in phase A with probability
// shortChance, half of them deadlines, a quarter cancelled by a timer and
// a quarter cancelled at once; the usual one otherwise.
func (w *worker) nextContext() shortContext {
	if !w.impatientNow() || w.rng.Float64() >= shortChance {
		return shortContext{}
	}
	c := shortContext{life: w.uniform(shortMin, shortMax)}
	switch w.rng.IntN(4) {
	case 0, 1:
		c.kind = shortDeadline
	case 2:
		c.kind = shortCancel
	default:
		c.kind, c.life = shortCancelAtOnce, 0
	}
	return c
}

// String describes a short context, as Event.Context does; it is empty for
// the usual one.
func (c shortContext) String() string {
	switch c.kind {
	case shortDeadline:
		return "deadline " + c.life.Round(time.Microsecond).String()
	case shortCancel:
		return "cancel after " + c.life.Round(time.Microsecond).String()
	case shortCancelAtOnce:
		return "cancel at once"
	}
	return ""
}

// start returns the context, derived from parent, right before the call:
// the usual one ends after timeout. It also returns, for a short context,
// what tells when it ended (nil for the usual one), and the function that
// releases the context once the call has returned.
func (c shortContext) start(parent context.Context, timeout time.Duration) (context.Context, *contextEnd, func()) {
	switch c.kind {
	case shortDeadline:
		ctx, cancel := context.WithTimeout(parent, c.life)
		deadline, _ := ctx.Deadline()
		end := &contextEnd{deadline: safety.Deadline(deadline)}
		stop := context.AfterFunc(ctx, func() { end.noticed.Store(safety.Now()) })
		return ctx, end, func() { stop(); cancel() }
	case shortCancel, shortCancelAtOnce:
		ctx, cancel := context.WithCancel(parent)
		end := &contextEnd{}
		timer := time.AfterFunc(c.life, func() {
			end.canceled.Store(safety.Now())
			cancel()
		})
		return ctx, end, func() { timer.Stop(); cancel() }
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	return ctx, nil, cancel
}

// contextEnd tells when a short context ended, on the clock of
// safety.Now.
type contextEnd struct {
	deadline int64 // the deadline of a deadline context
	// noticed is when the process ran a function that the deadline
	// context's end triggers (context.AfterFunc); 0 before.
	noticed  atomic.Int64
	canceled atomic.Int64 // when a cancelled context was cancelled; 0 before
}

// at returns when the context had ended by now, or 0 if it had not. A
// deadline ends a call when the process learns of it, as its timer fires:
// on a loaded machine a stall of the whole process (runs have seen 57 ms
// without an event from any worker) can delay that past the deadline, for
// the library and for the function that notes it alike. A deadline passed
// that the process had not noticed by now ended the call now.
func (c *contextEnd) at(now int64) int64 {
	if c.deadline != 0 {
		if now < c.deadline {
			return 0
		}
		if noticed := c.noticed.Load(); noticed != 0 && noticed <= now {
			return max(c.deadline, noticed)
		}
		return now
	}
	return c.canceled.Load()
}

// outlived is how long a call may go on after its context ended and still
// fail with an answer of its own: the library may have had that answer
// just before the context ended, and a goroutine on two busy cores may be
// preempted for milliseconds between that moment and its return (C4
// allows as much between a worker's clock reading and the library's).
const outlived = 10 * time.Millisecond

// endedBy returns the error of ctx when ctx ended a call that returned
// err at returned (a reading of safety.Now), or nil. end tells when ctx
// ended; nil, for the usual context, gives nil. A call was ended by its
// context when it failed after the context ended and
//
//   - its error is a context error;
//   - or it stopped waiting for a node's reply (a *redlock.QuorumError
//     of a round no quorum decided, with a node that timed out): a short
//     context ends 25 times sooner than the node timeout, so that wait
//     ended with the context's deadline, or went on despite its
//     cancellation;
//   - or it returned more than outlived after the context ended: the
//     context should have ended its wait.
//
// A failure that came with every node's answer in hand, within outlived
// of the context's end (held by another, a node down), may be an answer
// of its own. It must be called before the context is released.
func endedBy(ctx context.Context, end *contextEnd, returned int64, err error) error {
	if err == nil || end == nil {
		return nil
	}
	ended := ctx.Err()
	if ended == nil && end.deadline != 0 && returned >= end.deadline {
		ended = context.DeadlineExceeded // the context's timer has not fired yet
	}
	if ended == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return ended
	}
	var quorum *redlock.QuorumError
	if errors.As(err, &quorum) && quorum.Got < quorum.Need {
		// A round that a quorum decided stopped waiting for the rest of
		// its nodes for that reason, whatever became of the attempt after
		// it (a fence commit that a node restarted since refused): those
		// nodes count as timed out too.
		for _, node := range quorum.Nodes {
			// A node whose own connection timed out was awaited, and
			// answered: only one whose reply was not awaited counts.
			if node.Outcome == redlock.OutcomeTimeout && !errors.Is(node.Err, redlock.ErrNodeUnreachable) {
				return ended
			}
		}
	}
	if at := end.at(returned); at != 0 && returned-at > int64(outlived) {
		return ended
	}
	return nil
}

// markContext records on e, the result of a call with context ctx that
// returned err at returned, whether the context ended the call (see
// endedBy) and which context error err matches; calls with the usual
// context (end is nil) are left alone. It reports whether the context
// ended the call, and must be called before the context is released.
func markContext(e *safety.Event, ctx context.Context, end *contextEnd, returned int64, err error) bool {
	if end == nil || err == nil {
		return false
	}
	ended := endedBy(ctx, end, returned, err)
	for _, target := range []error{ended, context.DeadlineExceeded, context.Canceled} {
		if target != nil && errors.Is(err, target) {
			e.ContextErr = target.Error()
			break
		}
	}
	if ended == nil {
		return false
	}
	e.EndedBy = ended.Error()
	return true
}

// shortFigures are the calls with short contexts of a history.
type shortFigures struct {
	calls    int            // calls with a short context
	byMethod map[string]int // calls, by method
	// ended counts the calls that their context ended; deadline and
	// canceled those whose error matched context.DeadlineExceeded and
	// context.Canceled.
	ended, deadline, canceled int
	// unmatched describes the calls that their context ended and whose
	// error did not match the context's error; unmatchedBy counts them by
	// method and kind of context.
	unmatched   []string
	unmatchedBy map[string]int
}

// countShortCalls reads the calls with short contexts from history.
func countShortCalls(history []safety.Event) shortFigures {
	f := shortFigures{byMethod: map[string]int{}, unmatchedBy: map[string]int{}}
	type pending struct {
		method  string
		context string
	}
	calls := map[string]pending{} // "hold/operation" → its call
	operation := func(kind safety.Kind) string {
		switch kind {
		case safety.KindAcquireCall, safety.KindAcquireOK, safety.KindAcquireFail, safety.KindAcquireInfo:
			return "acquire"
		case safety.KindExtendCall, safety.KindExtendOK, safety.KindExtendFail:
			return "extend"
		case safety.KindReleaseCall, safety.KindReleaseOK, safety.KindReleaseLost, safety.KindReleaseError, safety.KindReleaseInfo:
			return "release"
		}
		return ""
	}
	for _, e := range history {
		op := operation(e.Kind)
		if op == "" {
			continue
		}
		id := e.Hold + "/" + op
		switch e.Kind {
		case safety.KindAcquireCall, safety.KindExtendCall, safety.KindReleaseCall:
			delete(calls, id)
			if e.Context == "" {
				continue
			}
			method := map[string]string{"extend": "Extend", "release": "Unlock"}[op]
			if op == "acquire" {
				method = e.What
			}
			calls[id] = pending{method: method, context: e.Context}
			f.calls++
			f.byMethod[method]++
			continue
		}
		call, ok := calls[id]
		if !ok {
			continue
		}
		delete(calls, id)
		switch e.ContextErr {
		case context.DeadlineExceeded.Error():
			f.deadline++
		case context.Canceled.Error():
			f.canceled++
		}
		if e.EndedBy == "" {
			continue
		}
		f.ended++
		if e.ContextErr != e.EndedBy {
			kind, _, _ := strings.Cut(call.context, " ")
			f.unmatchedBy[call.method+" with a "+kind+" context"]++
			f.unmatched = append(f.unmatched, fmt.Sprintf("%s of %s with %s, ended by %q, returned: %s",
				call.method, e.Hold, call.context, e.EndedBy, e.Err))
		}
	}
	return f
}

// String sums up the figures on one line.
func (f shortFigures) String() string {
	return fmt.Sprintf("%d calls with short contexts (%s), %d ended by their context, %d ended with a context error (deadline %d, canceled %d), %d with another error",
		f.calls, countsText(f.byMethod), f.ended, f.deadline+f.canceled, f.deadline, f.canceled, len(f.unmatched))
}

// countsText lists counts by name, sorted: "Lock 3, Unlock 5".
func countsText(counts map[string]int) string {
	var parts []string
	for name, count := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", name, count))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func TestEndedBy(t *testing.T) {
	now := safety.Now()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	running, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	cancelledAt := func(at int64) *contextEnd {
		end := &contextEnd{}
		end.canceled.Store(at)
		return end
	}
	justCancelled, longCancelled := cancelledAt(now-int64(time.Millisecond)), cancelledAt(now-int64(20*time.Millisecond))
	justExpired := &contextEnd{deadline: now - int64(time.Millisecond)}
	expiredAt := func(deadline, noticed int64) *contextEnd {
		end := &contextEnd{deadline: now - deadline}
		end.noticed.Store(now - noticed)
		return end
	}
	longExpired, noticedLate := expiredAt(int64(20*time.Millisecond), int64(20*time.Millisecond)), expiredAt(int64(60*time.Millisecond), int64(time.Millisecond))
	// A node whose reply the round did not await, and one whose connection
	// timed out, as redlock reports them.
	notAwaited := errors.New("redlock: reply not awaited: the round was already decided")
	nodeTimeout := fmt.Errorf("%w: %w", redlock.ErrNodeUnreachable, os.ErrDeadlineExceeded)
	quorum := func(outcome redlock.Outcome, err error) error {
		return &redlock.QuorumError{Operation: redlock.OperationLock, Key: "k", Got: 0, Need: 1,
			Nodes: []redlock.NodeResult{{Address: "a", Outcome: outcome, Err: err}}}
	}
	tests := []struct {
		name  string
		ctx   context.Context
		end   *contextEnd
		err   error
		ended error
	}{
		{name: "success", ctx: canceled, end: longCancelled, err: nil},
		{name: "usual context", ctx: canceled, end: nil, err: context.Canceled},
		{name: "context still running", ctx: running, end: &contextEnd{deadline: now + int64(time.Hour)}, err: quorum(redlock.OutcomeTimeout, notAwaited)},
		{name: "deadline passed, timer not fired", ctx: running, end: justExpired, err: quorum(redlock.OutcomeTimeout, notAwaited), ended: context.DeadlineExceeded},
		{name: "a node's own timeout, right after the deadline", ctx: running, end: justExpired, err: quorum(redlock.OutcomeTimeout, nodeTimeout)},
		{name: "context error", ctx: canceled, end: justCancelled, err: fmt.Errorf("x: %w", context.Canceled), ended: context.Canceled},
		{name: "wrong context error", ctx: canceled, end: justCancelled, err: context.DeadlineExceeded, ended: context.Canceled},
		{name: "a node not awaited", ctx: canceled, end: justCancelled, err: quorum(redlock.OutcomeTimeout, notAwaited), ended: context.Canceled},
		{name: "a node not awaited by the deadline", ctx: expired, end: justExpired, err: quorum(redlock.OutcomeTimeout, notAwaited), ended: context.DeadlineExceeded},
		{name: "every node answered right after the cancellation", ctx: canceled, end: justCancelled, err: quorum(redlock.OutcomeHeld, nil)},
		{name: "every node answered long after the cancellation", ctx: canceled, end: longCancelled, err: quorum(redlock.OutcomeHeld, nil), ended: context.Canceled},
		{name: "every node answered long after the deadline", ctx: expired, end: longExpired, err: quorum(redlock.OutcomeHeld, nil), ended: context.DeadlineExceeded},
		{name: "every node answered right after a deadline noticed late", ctx: expired, end: noticedLate, err: quorum(redlock.OutcomeHeld, nil)},
		{name: "a node down", ctx: expired, end: justExpired, err: quorum(redlock.OutcomeNotSent, errors.New("refused"))},
		{name: "an answer of its own", ctx: expired, end: justExpired, err: redlock.ErrLockLost},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			assert.Equal(t, test.ended, endedBy(test.ctx, test.end, now, test.err))
		})
	}
}

func TestCountShortCalls(t *testing.T) {
	const deadline, canceled = "context deadline exceeded", "context canceled"
	history := []safety.Event{
		{Kind: safety.KindAcquireCall, Hold: "w.g0#1", What: "Lock"},
		{Kind: safety.KindAcquireFail, Hold: "w.g0#1", Err: "not acquired"},
		{Kind: safety.KindAcquireCall, Hold: "w.g0#2", What: "TryLock", Context: "cancel at once"},
		{Kind: safety.KindAcquireInfo, Hold: "w.g0#2", Err: "timeout", EndedBy: canceled},
		{Kind: safety.KindAcquireCall, Hold: "w.g0#3", What: "Lock", Context: "deadline 1ms"},
		{Kind: safety.KindAcquireInfo, Hold: "w.g0#3", Err: "deadline", EndedBy: deadline, ContextErr: deadline},
		{Kind: safety.KindAcquireCall, Hold: "w.g0#4", What: "TryLock", Context: "deadline 1ms"},
		{Kind: safety.KindAcquireOK, Hold: "w.g0#4"},
		{Kind: safety.KindExtendCall, Hold: "w.g0#4", Context: "cancel after 300µs"},
		{Kind: safety.KindExtendFail, Hold: "w.g0#4", Err: "lost"},
		{Kind: safety.KindReleaseCall, Hold: "w.g0#4", Context: "cancel after 1ms"},
		{Kind: safety.KindReleaseInfo, Hold: "w.g0#4", Err: "canceled", EndedBy: canceled, ContextErr: canceled},
		{Kind: safety.KindReleaseCall, Hold: "w.g0#5", Context: "deadline 200µs"},
		{Kind: safety.KindReleaseInfo, Hold: "w.g0#5", Err: "lost: timeout", EndedBy: deadline},
	}
	f := countShortCalls(history)
	assert.Equal(t, 6, f.calls)
	assert.Equal(t, map[string]int{"Lock": 1, "TryLock": 2, "Extend": 1, "Unlock": 2}, f.byMethod)
	assert.Equal(t, 4, f.ended)
	assert.Equal(t, 1, f.deadline)
	assert.Equal(t, 1, f.canceled)
	assert.Equal(t, map[string]int{"TryLock with a cancel context": 1, "Unlock with a deadline context": 1}, f.unmatchedBy)
	require.Len(t, f.unmatched, 2)
	assert.Contains(t, f.unmatched[0], "TryLock of w.g0#2 with cancel at once")
	assert.Contains(t, f.unmatched[1], "lost: timeout")
}
