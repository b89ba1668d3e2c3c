package redlock

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/round"
	"github.com/lockmux/lockmux/redlock/internal/waiting"
)

// acquireWithRetries runs attempts, as waiting.Waiter.Retry says, until
// one wins a hold that is still valid when it is returned. A hold whose
// validity ended before it could be returned counts as a failed attempt.
// The caller has the turn; on success the hold's validity was checked
// last (validAtReturn). The first attempt borrows no wait state: a Lock
// that wins it does not touch the Client's lender (as Semaphore.acquireAll).
func (m *Mutex) acquireWithRetries(ctx context.Context) error {
	unheardBefore := m.client.notifier.Unheard()
	elapsed, generation, err := m.attempt(ctx, 1)
	if err == nil && m.validAtReturn(generation) {
		return nil // nothing runs between the check and the return
	}
	// A failed round's tally goes into the wait state. A hold that ended
	// while the observers ran is judged first: if another goroutine
	// unlocked it, nothing needs borrowing.
	var w *waitState
	if err == errAttemptFailed {
		w = m.lendWait()
	}
	outcome, failure := (*lockAttempts)(m).ended(ctx, elapsed, generation, err, false, false)
	switch outcome {
	case waiting.Won, waiting.Aborted, waiting.FailedForGood:
		if w != nil {
			m.giveBackWait(w)
		}
		return failure.Err
	}
	if w == nil {
		w = m.lendWait()
	}
	w.AttemptBegan(unheardBefore)
	if outcome == waiting.FailedRetryNow {
		w.RetryAtOnce()
	}
	err = w.Retry(ctx, m.retryRule(), (*lockAttempts)(m), 2, failure)
	if err != nil && w.InLine() {
		m.leaveLine(&w.line) // the turn is still this goroutine's
	}
	m.giveBackWait(w)
	return err
}

// lockAttempts is a Mutex as waiting.Waiter.Retry sees its Lock.
type lockAttempts Mutex

// Attempt makes attempt number of a Lock and says how it ended.
func (l *lockAttempts) Attempt(ctx context.Context, number int) (waiting.Outcome, waiting.Failure) {
	m := (*Mutex)(l)
	elapsed, generation, err := m.attempt(ctx, number)
	w := m.waitState()
	if err == nil {
		w.StopWaiting(true)
	}
	inLine := w.InLine() // read before another goroutine may take the turn
	return l.ended(ctx, elapsed, generation, err, err == nil && m.validAtReturn(generation), inLine)
}

// ended says how an attempt of a Lock ended: its results, whether the hold
// it won was still valid at return, and whether the waiter was in line.
func (l *lockAttempts) ended(ctx context.Context, elapsed time.Duration, generation uint64, err error, valid, inLine bool) (waiting.Outcome, waiting.Failure) {
	m := (*Mutex)(l)
	c, w := m.client, m.waitState()
	var failure error // the attempt's error once it failed, unless made from its tally (failed)
	switch {
	case err == nil:
		if valid {
			if inLine {
				// The nodes that granted took the waiter out of line; the
				// others let its heartbeat lapse.
				c.notifier.LeaveLine(&w.Waiter)
			}
			return waiting.Won, waiting.Failure{}
		}
		// The hold won ended while the observers ran: the attempt failed
		// after all.
		if failure = m.dropEndedHold(generation); failure == nil {
			// Unlocked by another goroutine, whose release may be using
			// the rounds: the turn passes on once Lock returns.
			if inLine {
				c.notifier.LeaveLine(&w.Waiter)
			}
			return waiting.Won, waiting.Failure{}
		}
	case err != errAttemptFailed:
		return waiting.Aborted, waiting.Failure{Err: err}
	default:
		tally := &m.acquisitionRound().Tally
		w.failed.CopyFrom(tally)
		w.failedElapsed = elapsed
		if tally.Unreachable() {
			// Nodes that are down were being dialled again: give them one
			// chance to come back before saying the quorum is out of reach.
			// A misconfigured node cannot come back that way.
			if w.RetriedNow() || !tally.DownByTransport() {
				return waiting.FailedForGood, waiting.Failure{Err: m.failure(nil)}
			}
			c.group.Connect(ctx)
			return waiting.FailedRetryNow, waiting.Failure{}
		}
	}
	// A holder that simply expires announces nothing: a wait for a release
	// ends, at the latest, when a quorum of nodes stops refusing, as they
	// told (refusedFor). The rounds are lent: after a hold that started and
	// was dropped, the tally counts nothing (see lentRounds).
	tally := &m.acquisitionRound().Tally
	got, refused := tally.Got, tally.Refused
	// Somebody holds the lock: listen for its release. A split vote backs
	// off at random, so that competitors fall out of step. A reader
	// competes with nobody: it waits for the writer's release.
	held := err != nil && refused > 0
	backoff := held && got > 0 && m.kind != round.KindRead
	return waiting.Failed, waiting.Failure{Held: held, Split: got > 0, Backoff: backoff, RefusedFor: tally.RefusedOnQuorumFor(), Err: failure}
}

// BeforeWait keeps a fair Mutex's place in line before a wait.
func (l *lockAttempts) BeforeWait(ctx context.Context, failure waiting.Failure) error {
	m := (*Mutex)(l)
	w := m.waitState()
	inLine := w.InLine()
	if failure.Err == nil && inLine && m.acquisitionRound().Tally.LostPlace() {
		// The waiter's place lapsed while it did not try (a pause longer
		// than its heartbeat), or the nodes that served it in a split vote
		// took it out of line: it leaves what is left of its place and
		// joins again, at the back.
		m.leaveLine(&w.line)
		inLine = false
	}
	if failure.Held && m.kind == round.KindFair && !inLine {
		// Somebody holds the lock, or waits for it: take a place in line,
		// which the later attempts keep. Its rounds are the acquisition's:
		// the attempt's tally was read before.
		if _, err := m.joinLine(ctx, &w.line); err != nil {
			return fmt.Errorf("redlock: lock %q: waiting in line: %w", m.key, err)
		}
	}
	return nil
}

// Stop returns the error of a Lock that stops after failed attempt number.
func (l *lockAttempts) Stop(number int, cause error, failure waiting.Failure) error {
	m := (*Mutex)(l)
	if cause != nil {
		return fmt.Errorf("redlock: lock %q: %w: %w", m.key, cause, m.failure(failure.Err))
	}
	return fmt.Errorf("redlock: lock %q: %d attempts failed (MutexOptions.MaxTries): %w", m.key, number, m.failure(failure.Err))
}

// failure returns the error of the last failed attempt of a Lock: failure
// when it is set, or else the *QuorumError of the attempt's tally (failed).
func (m *Mutex) failure(failure error) error {
	if failure != nil {
		return failure
	}
	w := m.waitState()
	return quorumError(&w.failed, m.key, m.client.addresses, w.failedElapsed)
}

// attempt runs one acquisition: one round, two with fencing, and a
// resumption check first when MutexOptions.Token is set. On success the
// Mutex is held and attempt returns the hold's generation; the caller
// checks the hold's validity once more before it returns it (see
// validAtReturn). On failure it sends the release to every node that may
// have set the key and returns errAttemptFailed, with the details in the
// acquisition round's tally. number counts the attempts of one Lock from
// 1; the attempts after the first, those of a Lock that waits, learn how
// long each node will refuse, even for a single key.
func (m *Mutex) attempt(ctx context.Context, number int) (time.Duration, uint64, error) {
	c := m.client
	a := &m.acquisition
	begun, err := m.begin(ctx)
	if err != nil {
		return 0, 0, err
	}
	clock := c.options.clock
	if m.kind == round.KindFair && number == 1 {
		// A Lock's first attempt is a newcomer's: the identity of an
		// earlier Lock's place in line is not this one's.
		a.extras = nil
	}
	if m.fixedToken() != "" {
		elapsed, generation := m.resume(ctx, number)
		if generation != 0 {
			return elapsed, generation, nil
		}
		if m.acquisitionRound().Tally.Unreachable() {
			// The nodes that could not check (down, or refusing the check
			// by their configuration) could not take the keys either: the
			// check's failure is the attempt's, not a "held by another"
			// from the acquisition that would follow.
			return m.attemptFailed(ctx, number, elapsed)
		}
	}
	start := clock.Now()
	if c.quarantine != nil {
		start = begun
	}
	command := round.Acquire
	switch {
	case m.fencing:
		command = round.AcquireFenced
	case len(m.keys) > 1:
		command = round.AcquireMulti
	case number > 1:
		command = round.AcquireWaiting
	}
	r := m.acquisitionRound()
	m.start(r, command, a.token(), m.ttl.Milliseconds(), nil)
	waitErr := m.exchange(ctx, r)
	tally := &r.Tally
	var fence int64
	committed := true
	if m.fencing && tally.Got >= c.need && waitErr == nil {
		if fence, committed = m.commitFence(ctx); !committed {
			// The attempt failed at the commit: its error reports that.
			tally.TakeCommit(&m.commitRound().Tally)
		}
	}
	end := clock.Now()
	elapsed := end.Sub(start)
	remaining := round.Validity(m.ttl, elapsed, c.options.DriftFactor)
	// A node that connected during the round may have shown that two
	// addresses reach one server (its OnConnect ran before it carried the
	// round's command): then the count cannot be trusted.
	unusable := c.usable()
	acquired := tally.Got >= c.need && committed && remaining > 0 && waitErr == nil && unusable == nil
	c.stats.recordAcquire(elapsed, acquired)
	if acquired {
		return elapsed, m.startAcquiredHold(start, end, remaining, fence, tally, number), nil
	}
	m.releaseAfterFailure()
	if unusable != nil {
		return elapsed, 0, unusable
	}
	return m.attemptFailed(ctx, number, elapsed)
}

// begin starts an attempt: it checks that the Client and ctx still allow
// one and draws the token. With Options.Quarantine it then verifies the
// nodes' markers, and returns the time before it did: the attempt's
// validity counts from there, since the read can last a node timeout.
func (m *Mutex) begin(ctx context.Context) (begun time.Time, err error) {
	c := m.client
	if err := c.usable(); err != nil {
		return begun, err
	}
	if err := ctx.Err(); err != nil {
		return begun, fmt.Errorf("redlock: lock %q: %w", m.key, context.Cause(ctx))
	}
	if err := m.newToken(); err != nil {
		return begun, err
	}
	if c.quarantine != nil {
		begun = c.options.clock.Now()
		c.quarantine.Verify(ctx)
	}
	return begun, nil
}

// startAcquiredHold starts the hold an acquisition won (see startHold)
// and tells the observer. tally counted the acquisition; once the hold
// starts, another goroutine may Unlock it and use the round and the
// tally, so nothing of them is read after this.
func (m *Mutex) startAcquiredHold(start, end time.Time, remaining time.Duration, fence int64, tally *round.Tally, number int) uint64 {
	c := m.client
	got := tally.Got
	generation := m.startHold(start, end.Add(remaining), fence, tally)
	if observer := c.options.Observer; observer != nil {
		observer.OnAcquire(AcquireEvent{Key: m.key, Attempt: number, Got: got, Need: c.need, Elapsed: end.Sub(start), Validity: remaining})
	}
	return generation
}

// attemptFailed tells the observer of a failed attempt, whose details are
// in the acquisition round's tally, and returns errAttemptFailed, or the
// caller's context error first when it ended.
func (m *Mutex) attemptFailed(ctx context.Context, number int, elapsed time.Duration) (time.Duration, uint64, error) {
	c := m.client
	tally := &m.acquisitionRound().Tally
	if observer := c.options.Observer; observer != nil {
		observer.OnAcquire(AcquireEvent{Key: m.key, Attempt: number, Got: tally.Got, Need: c.need, Elapsed: elapsed,
			Err: quorumError(tally, m.key, c.addresses, elapsed)})
	}
	if ctx.Err() != nil {
		// The caller stopped waiting: its error says so first.
		return elapsed, 0, fmt.Errorf("redlock: lock %q: %w: %w", m.key, context.Cause(ctx), quorumError(tally, m.key, c.addresses, elapsed))
	}
	return elapsed, 0, errAttemptFailed
}

// newToken picks the token of the next hold: MutexOptions.Token when set,
// otherwise a new random one, followed by a space and
// MutexOptions.Metadata when set.
func (m *Mutex) newToken() error {
	a := &m.acquisition
	value := a.value[:0]
	if token := m.fixedToken(); token != "" {
		value = append(value, token...)
	} else {
		var random [tokenLength]byte
		if err := newToken(&random); err != nil {
			return err
		}
		value = append(value, random[:]...)
	}
	if metadata := m.metadata(); metadata != "" {
		value = append(value, ' ')
		value = append(value, metadata...)
	}
	a.value = value
	return nil
}

// commitFence runs the second round of a fenced acquisition: the fence is
// one more than the largest counter of any lock key that the nodes that
// said OK returned, and it is written back to every lock key's counter on
// those nodes if they still hold the lock. Any later acquisition of one of
// these keys, alone or with others, has a quorum that shares a node with
// the quorum that confirms this commit, reads that key's counter there, at
// least this fence, and gets a larger one. It returns the fence and
// whether a quorum confirmed it.
func (m *Mutex) commitFence(ctx context.Context) (int64, bool) {
	a := &m.acquisition
	r, commit := m.acquisitionRound(), m.commitRound()
	var fence int64
	for _, node := range r.Tally.Nodes {
		if node.Outcome == round.OutcomeConfirmed && node.Number > fence {
			fence = node.Number
		}
	}
	fence++ // parseCounter admits no counter without a next fence
	m.start(commit, round.CommitFence, a.token(), fence, nil)
	for i, node := range r.Tally.Nodes {
		if node.Outcome != round.OutcomeConfirmed {
			commit.Mux.Skip(i) // it holds nothing of ours: not sent
		}
	}
	if m.exchange(ctx, commit) != nil {
		return fence, false
	}
	return fence, commit.Tally.Got >= m.client.need
}

// releaseAfterFailure sends the release to every node that may hold the key
// after a failed attempt, without waiting for the replies: a node whose
// SET timed out may still apply it, and the release, queued behind it on
// the same connection, removes it. The release is carried: the transport
// finishes it (see mux.Round.Carry). It announces nothing: waking the
// waiters for a lock nobody held would only make them collide again.
func (m *Mutex) releaseAfterFailure() {
	m.releaseSet(round.QuietRelease, round.NoChoice)
}

// releaseSet sends command, a quiet release, to every node that may have
// set a key in the acquisition round but for the candidate kept (see
// round.Tally.MayHoldOther), as releaseAfterFailure says.
func (m *Mutex) releaseSet(command round.Command, kept int64) {
	r := m.acquisitionRound()
	needed := false
	for i := range r.Tally.Nodes {
		if r.Tally.MayHoldOther(i, kept) {
			needed = true
		}
	}
	if !needed {
		return
	}
	for i := range r.Tally.Nodes {
		if !r.Tally.MayHoldOther(i, kept) {
			r.Mux.Skip(i)
		}
	}
	m.start(r, command, m.acquisition.token(), 0, nil)
	m.send(r)
}

// resume checks whether a quorum of nodes still holds the keys with
// MutexOptions.Token and, if so, takes the hold over with the validity the
// nodes have left: the need-th longest remaining TTL, counted from the
// start of the check, less the drift allowance of that remaining TTL. The
// allowance follows the TTL the hold relies on, as an acquisition's
// follows the TTL it set, never the resumer's MutexOptions.TTL: a hold
// resumed at once is valid no longer than its acquirer's. It returns the
// hold's generation, 0 when the hold was not resumed: the attempt then
// goes on as an acquisition with the same token. attempt is the number of
// the attempt it begins, which the observer is told.
func (m *Mutex) resume(ctx context.Context, attempt int) (time.Duration, uint64) {
	c := m.client
	clock := c.options.clock
	start := clock.Now()
	a := &m.acquisition
	r := m.acquisitionRound()
	m.start(r, round.Check, a.token(), 0, nil)
	waitErr := m.exchange(ctx, r)
	end := clock.Now()
	elapsed := end.Sub(start)
	tally := &r.Tally
	if tally.Got < c.need || waitErr != nil || c.usable() != nil {
		return elapsed, 0
	}
	lent := m.lentRounds()
	remaining := lent.RemainingTTLs[:0]
	for _, node := range tally.Nodes {
		if node.Outcome == round.OutcomeConfirmed {
			remaining = append(remaining, node.Number)
		}
	}
	slices.Sort(remaining)
	// A quorum holds the keys for at least the need-th longest TTL.
	quorumTTL := time.Duration(remaining[len(remaining)-c.need]) * time.Millisecond
	until := start.Add(round.Validity(quorumTTL, 0, c.options.DriftFactor))
	lent.RemainingTTLs = remaining
	if !until.After(end) {
		return elapsed, 0
	}
	c.stats.recordAcquire(elapsed, true)
	got := tally.Got // nothing of the tally is read once the hold starts
	generation := m.startHold(start, until, 0, tally)
	if observer := c.options.Observer; observer != nil {
		observer.OnAcquire(AcquireEvent{Key: m.key, Attempt: attempt, Got: got, Need: c.need, Elapsed: elapsed, Validity: until.Sub(end)})
	}
	return elapsed, generation
}
