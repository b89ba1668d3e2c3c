package redlock

// Regression tests for the bugs other lock libraries shipped, by their row
// in the table of RELIABILITY.md §4. Rows covered elsewhere: 1 and 22
// (quorum_test.go), 4 (TestD10UnlockAfterExpiry), 5 (TestD11…), 11
// (TestD9…), 13 (TestD12…), 24 (TestD7… and conn's late-reply test).

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// Row 2 (redsync PR #71): an extension that takes longer than the rest of
// the validity fails, and a successful one moves Until from the
// extension's own start.
func TestRow2ExtendChecksValidityAndUpdatesUntil(t *testing.T) {
	const ttl = time.Second
	drift := ttl/100 + 2*time.Millisecond
	clock := newStepClock(time.Millisecond)
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{clock: clock})
	m := client.NewMutex("k", MutexOptions{TTL: ttl})
	require.NoError(t, m.Lock(context.Background()))

	// Each reading moves the clock by 1 ms: the extension starts at the
	// next reading.
	extensionStart := clock.Now().Add(time.Millisecond)
	require.NoError(t, m.Extend(context.Background()))
	assert.Equal(t, extensionStart.Add(ttl-drift), m.Until(), "the validity is measured from the extension's start")

	// Now every reading moves 600 ms: the extension starts in time but
	// finishes after the validity ended.
	until := m.Until()
	clock.setStep(600 * time.Millisecond)
	require.ErrorIs(t, m.Extend(context.Background()), ErrLockLost)
	assert.Equal(t, until, m.Until(), "a failed extension leaves the validity as it was")
}

// Row 3 (redsync #72): whether the hold is valid is decided by the local
// validity alone, never by asking the nodes, which may still hold the key.
func TestRow3ValidityIsLocal(t *testing.T) {
	clock := newManualClock()
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{clock: clock})
	m := client.NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(context.Background()))
	token := m.Token()
	clock.Advance(10 * time.Second)

	assert.Equal(t, repeat(token, 3), client.values(t, "k"), "the nodes still hold the key")
	assert.False(t, clock.Now().Before(m.Until()), "but the validity has ended")
	assert.ErrorIs(t, m.Extend(context.Background()), ErrLockLost)
	assert.ErrorIs(t, m.Unlock(context.Background()), ErrLockLost)
}

// Row 7 (bsm/redislock #28, #74): Lock keeps trying for as long as its
// context allows, not for one TTL.
func TestRow7AcquireDeadlineIsTheContext(t *testing.T) {
	nodes := startCluster(t, 1, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{})
	require.NoError(t, holder.Lock(context.Background()))

	clock := newManualClock()
	ctx, cancel := context.WithCancel(context.Background())
	const attempts = 20
	observer := &recordingObserver{onFailed: func(attempt int) {
		clock.Advance(100 * time.Millisecond) // twenty attempts span two TTLs
		if attempt == attempts {
			cancel()
		}
	}}
	client := nodes.client(t, Options{clock: clock, Observer: observer, RetryDelayMin: time.Millisecond, RetryDelayMax: time.Millisecond})
	err := client.NewMutex("k", MutexOptions{TTL: time.Second}).Lock(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Len(t, observer.acquires, attempts, "Lock tried until its context ended")
}

// Row 8 (bsm/redislock PR #64): a Lock that runs out of time returns the
// context's error, matchable with errors.Is.
func TestRow8ContextErrorsStayMatchable(t *testing.T) {
	nodes := startCluster(t, 1, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{})
	require.NoError(t, holder.Lock(context.Background()))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := nodes.client(t, Options{}).NewMutex("k", MutexOptions{}).Lock(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, ErrNotAcquired)
}

// Row 12 (redlock-rb #76) and row 19 (Redisson #1606, redlock-rb PR #5):
// a node whose answer was lost may hold the key. A successful hold
// releases it with the others; a failed attempt releases every node that
// said OK or did not answer.
func TestRow12UnknownAnswersAreReleased(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{NodeTimeout: 50 * time.Millisecond})
	m := client.NewMutex("k", MutexOptions{TTL: 10 * time.Second})

	nodes.servers[0].Stop()
	require.NoError(t, m.Lock(context.Background()), "two of three nodes suffice")
	nodes.servers[0].Cont() // the SET it received runs now
	assert.Equal(t, m.Token(), client.values(t, "k")[0], "the ghost SET was applied")
	require.NoError(t, m.Unlock(context.Background()))
	assert.Equal(t, repeat("", 3), client.values(t, "k"), "and released with the rest")
}

// Rows 14 and 25 (node-redlock #296, etcd #11456): a lock whose validity
// is gone by the time the round ends is never reported, even if every node
// said OK.
func TestRow14NoLockWithoutValidity(t *testing.T) {
	const ttl = 100 * time.Millisecond
	clock := newStepClock(ttl - ttl/100 - 2*time.Millisecond) // elapsed = ttl − drift: validity 0
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{clock: clock})
	m := client.NewMutex("k", MutexOptions{TTL: ttl})
	require.ErrorIs(t, m.TryLock(context.Background()), ErrNotAcquired)
	assert.True(t, m.Until().IsZero())

	// The round's start and end are 96 ms apart: validity 1 ms, and the
	// clock stands still until TryLock returns.
	clock.setSteps(ttl-ttl/100-3*time.Millisecond, 2)
	require.NoError(t, m.TryLock(context.Background()))
	// The unlock starts another 96 ms later: the 1 ms validity is over.
	clock.setSteps(ttl-ttl/100-3*time.Millisecond, 1)
	assert.ErrorIs(t, m.Unlock(context.Background()), ErrLockLost)
}

// Row 15 (node-redlock #309, #313): releasing a lost lock takes one round
// and reports the loss.
func TestRow15ReleasingALostLockIsOneRound(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	for i := range nodes.servers {
		client.do(t, i, "DEL", "k") // the keys are gone: evicted, or expired
	}
	err := m.Unlock(context.Background())
	require.ErrorIs(t, err, ErrLockLost)
	var quorumError *QuorumError
	require.ErrorAs(t, err, &quorumError)
	assert.Equal(t, repeat(OutcomeMissing, 3), []Outcome{quorumError.Nodes[0].Outcome, quorumError.Nodes[1].Outcome, quorumError.Nodes[2].Outcome})
	assert.Equal(t, uint64(1), client.Stats().Release.Count)
}

// Row 16 (node-redlock #103, #253, PR #369): Extend updates the same
// Mutex, Done is closed when a quorum says the hold is gone, and nothing
// is left running after the hold ends.
func TestRow16ExtendUpdatesTheHoldAndDoneSignalsLoss(t *testing.T) {
	redistest.RequireReal(t) // the goroutine count must not include an in-process server's
	nodes := startCluster(t, 3, redistest.Options{})
	goroutines := runtime.NumGoroutine()
	client, err := New(nodes.addresses, Options{})
	require.NoError(t, err)
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	done := m.Done()
	before := m.Until()
	require.NoError(t, m.Extend(context.Background()))
	assert.True(t, m.Until().After(before), "the same Mutex carries the new validity")
	select {
	case <-done:
		t.Fatal("Done closed while the hold is valid")
	default:
	}

	for i := range nodes.servers {
		client.do(t, i, "SET", "k", "someone else")
	}
	require.ErrorIs(t, m.Extend(context.Background()), ErrLockLost)
	<-done // closed by the failed extension: the test would hang otherwise
	assert.ErrorIs(t, m.Unlock(context.Background()), ErrLockLost)
	assert.Equal(t, repeat("someone else", 3), client.values(t, "k"), "the other holder's keys are untouched")
	require.NoError(t, client.Close())
	assertGoroutinesBackTo(t, goroutines)
}
