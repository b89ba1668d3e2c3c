package redlock

// The deterministic scenarios of RELIABILITY.md §8.5 that concern the
// algorithm itself. Each test is named after its scenario.

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// D2: replies that come back after the TTL (a pause between the send and
// the reads) must not produce a lock, and every node is released.
func TestD2RepliesHeldPastTTL(t *testing.T) {
	ttl := time.Second
	clock := newStepClock(ttl) // every round appears to take the whole TTL
	client := startCluster(t, 5, redistest.Options{}).client(t, Options{clock: clock})
	m := client.NewMutex("k", MutexOptions{TTL: ttl})

	err := m.TryLock(context.Background())
	require.ErrorIs(t, err, ErrNotAcquired)
	var quorumError *QuorumError
	require.ErrorAs(t, err, &quorumError)
	assert.GreaterOrEqual(t, quorumError.Got, 3, "a quorum said OK, and yet the validity is gone")
	assert.True(t, m.Until().IsZero())
	assert.Equal(t, repeat("", 5), client.values(t, "k"), "all five nodes were released")
}

// D5: a node that restarts empty only after the longest validity has ended
// cannot cause two holders.
func TestD5DelayedRestart(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	first := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: 200 * time.Millisecond})
	second := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: 200 * time.Millisecond})
	require.NoError(t, first.Lock(context.Background()))
	until := first.Until()

	nodes.servers[0].Kill9()
	require.ErrorIs(t, second.TryLock(context.Background()), ErrNotAcquired, "two nodes still hold the first lock")
	<-time.After(time.Until(until)) // the scenario: the restart comes after the validity
	nodes.servers[0].Restart(t)

	require.NoError(t, second.Lock(context.Background()))
	assert.True(t, time.Now().After(until), "the second hold starts after the first one's validity")
}

// D6: a SET that reaches a node the client gave up on (a ghost SET) is
// removed by the release of the failed attempt.
func TestD6GhostSetIsReleased(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{NodeTimeout: 50 * time.Millisecond})
	nodes.servers[0].Stop()
	nodes.servers[1].Stop()

	m := client.NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	err := m.TryLock(context.Background())
	require.ErrorIs(t, err, ErrNotAcquired)
	var quorumError *QuorumError
	require.ErrorAs(t, err, &quorumError)
	assert.Equal(t, OutcomeTimeout, quorumError.Nodes[0].Outcome)
	assert.Equal(t, OutcomeTimeout, quorumError.Nodes[1].Outcome)
	assert.Equal(t, OutcomeConfirmed, quorumError.Nodes[2].Outcome)

	// The stopped servers still run the SET when they resume; the release
	// queued behind it on the client's connection removes it.
	nodes.servers[0].Cont()
	nodes.servers[1].Cont()
	assert.Equal(t, repeat("", 3), client.values(t, "k"), "no ghost key remains")
}

// D7: a reply that arrives after its deadline is never taken for a
// success (RELIABILITY.md F30).
func TestD7LateReplyGivesNoFalseSuccess(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 1, redistest.Options{})
	client := nodes.client(t, Options{NodeTimeout: 30 * time.Millisecond})
	m := client.NewMutex("k", MutexOptions{})

	nodes.servers[0].Stop()
	err := m.TryLock(context.Background())
	nodes.servers[0].Cont()
	require.ErrorIs(t, err, ErrNotAcquired)
	var quorumError *QuorumError
	require.ErrorAs(t, err, &quorumError)
	assert.Equal(t, OutcomeTimeout, quorumError.Nodes[0].Outcome)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)

	// The late +OK went to a closed connection. The next attempt runs on a
	// new one, after the release of the first, and wins honestly (a Lock:
	// the new connection's first vote waits for the node's marker).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, []string{m.Token()}, client.values(t, "k"))
	require.NoError(t, m.Unlock(context.Background()))
}

// D8: after SCRIPT FLUSH, EVALSHA meets NOSCRIPT and the same round falls
// back to EVAL. NOSCRIPT is never taken for "not held".
func TestD8NoScriptFallsBackToEval(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	for i := range nodes.servers {
		require.True(t, client.do(t, i, "SCRIPT", "FLUSH").IsOK())
	}
	require.NoError(t, m.Extend(context.Background()))
	for i := range nodes.servers {
		require.True(t, client.do(t, i, "SCRIPT", "FLUSH").IsOK())
	}
	require.NoError(t, m.Unlock(context.Background()))
	// Unlock returns once a quorum confirmed; a release whose reply was not
	// awaited still falls back to EVAL, sent when its NOSCRIPT is read: by
	// the first read below at the latest.
	client.values(t, "k")
	assert.Equal(t, repeat("", 3), client.values(t, "k"))
}

// D9: an extension asked for after the local validity ended fails, even
// though the key is still on the nodes (redlock-rb#36).
func TestD9ExtendAfterLocalExpiry(t *testing.T) {
	clock := newManualClock()
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{clock: clock})
	m := client.NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(context.Background()))
	clock.Advance(10 * time.Second)
	pttlBefore := client.do(t, 0, "PTTL", "k").Int

	err := m.Extend(context.Background())
	require.ErrorIs(t, err, ErrLockLost)
	assert.LessOrEqual(t, client.do(t, 0, "PTTL", "k").Int, pttlBefore, "no PEXPIRE was sent")

	require.NoError(t, client.do(t, 0, "DEL", "k").Err())
	assert.ErrorIs(t, m.Extend(context.Background()), ErrLockLost, "nor with the key gone")
}

// D10: unlocking after the validity ended reports the loss, not success and
// not "taken" (redsync PR #143), in one round.
func TestD10UnlockAfterExpiry(t *testing.T) {
	clock := newManualClock()
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{clock: clock})
	m := client.NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(context.Background()))
	clock.Advance(11 * time.Second)

	err := m.Unlock(context.Background())
	require.ErrorIs(t, err, ErrLockLost)
	assert.NotErrorIs(t, err, ErrNotAcquired)
	assert.Equal(t, uint64(1), client.Stats().Release.Count, "one release round")
	assert.Equal(t, repeat("", 3), client.values(t, "k"), "the keys are still removed")
	require.NoError(t, m.Lock(context.Background()), "the Mutex can be locked again")
	require.NoError(t, m.Unlock(context.Background()))
}

// D11: cancelling the context while Lock waits between attempts ends Lock
// with the context's error (redsync PR #68). The retry delay is an hour:
// without the cancellation the test would hang.
func TestD11CancelDuringBackoff(t *testing.T) {
	nodes := startCluster(t, 1, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{})
	require.NoError(t, holder.Lock(context.Background()))

	ctx, cancel := context.WithCancel(context.Background())
	observer := &recordingObserver{onFailed: func(int) { cancel() }}
	waiter := nodes.client(t, Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour})
	err := waiter.NewMutex("k", MutexOptions{}).Lock(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, ErrNotAcquired, "the last attempt's outcome is kept")
}

// D12: the validity of a lock won after several attempts is measured from
// the start of the winning attempt (node-redlock #169, #296).
func TestD12ValidityAfterRetries(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{})
	require.NoError(t, holder.Lock(context.Background()))

	clock := newManualClock()
	const failures = 5
	observer := &recordingObserver{onFailed: func(attempt int) {
		clock.Advance(time.Second) // each failed attempt "takes" a second
		if attempt == failures {
			assert.NoError(t, holder.Unlock(context.Background()))
		}
	}}
	client := nodes.client(t, Options{clock: clock, Observer: observer, RetryDelayMin: time.Millisecond, RetryDelayMax: time.Millisecond})
	m := client.NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(context.Background()))
	drift := 10*time.Second/100 + 2*time.Millisecond
	assert.Equal(t, clock.Now().Add(10*time.Second-drift), m.Until(),
		"with %d failed attempts before, the validity still starts at the winning attempt", failures)
	require.NoError(t, m.Unlock(context.Background()))
}

// D14: two addresses that reach the same server are refused: it would
// count twice in a quorum (RELIABILITY.md F29). The run_ids are compared
// as the nodes connect, before any of their replies is counted: once the
// alias has connected, every operation fails. (A first round decided by
// the two distinct servers before the alias connected counted nothing
// twice, so the test lets the connections come up first.)
func TestD14DuplicateNodeIsDetected(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 2, redistest.Options{})
	alias := "redis://localhost:" + nodes.addresses[0][len("127.0.0.1:"):]
	client, err := New([]string{nodes.addresses[0], nodes.addresses[1], alias}, Options{})
	require.NoError(t, err, "New does not dial")
	defer client.Close()
	client.group.Connect(context.Background())
	m := client.NewMutex("k", MutexOptions{})
	err = m.Lock(context.Background())
	require.ErrorIs(t, err, ErrDuplicateNode)
	assert.Contains(t, err.Error(), nodes.addresses[0])
	assert.ErrorIs(t, m.TryLock(context.Background()), ErrDuplicateNode)
	_, err = New([]string{nodes.addresses[0], nodes.addresses[1], "redis://" + nodes.addresses[0]}, Options{})
	require.ErrorIs(t, err, ErrDuplicateNode, "the same address in another form")
}

// D16: under maxmemory (OOM) a held lock can still be extended, because the
// extension uses PEXPIRE, and released; a new SET fails as a node error.
func TestD16ExtendUnderOOM(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{ExtraArgs: []string{"--maxmemory-policy", "noeviction"}})
	client := nodes.client(t, Options{})
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	for i := range nodes.servers {
		require.True(t, client.do(t, i, "CONFIG", "SET", "maxmemory", "1").IsOK())
	}

	require.NoError(t, m.Extend(context.Background()))
	other := client.NewMutex("other", MutexOptions{})
	err := other.TryLock(context.Background())
	require.ErrorIs(t, err, ErrNotAcquired)
	var quorumError *QuorumError
	require.ErrorAs(t, err, &quorumError)
	assert.Equal(t, OutcomeError, quorumError.Nodes[0].Outcome)
	assert.Contains(t, quorumError.Nodes[0].Err.Error(), "OOM")
	assert.NotErrorIs(t, err, ErrConfig, "OOM is a passing failure")
	require.NoError(t, m.Unlock(context.Background()))
}
