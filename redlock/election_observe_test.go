package redlock

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// Observe delivers each leader in turn: after a Resign, after a leader's
// key expired, and a leader that came while nobody led; a leader renewed
// meanwhile is not delivered twice. Nothing polls: a change reaches the
// observer only through the nodes' reports, well before the test's bound.
func TestElectionObserveDeliversEveryChange(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = 600 * time.Millisecond
	observed := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{TTL: ttl}).Observe(ctx)
	next := func() Leader {
		t.Helper()
		select {
		case leader, ok := <-observed:
			require.True(t, ok, "Observe ended")
			return leader
		case <-ctx.Done():
			require.FailNow(t, "nothing observed")
			return Leader{}
		}
	}
	candidate := func(options Options) *Election {
		return nodes.client(t, options).NewElection("scheduler", ElectionOptions{TTL: ttl})
	}

	a, err := candidate(Options{NodeTimeout: 20 * time.Millisecond}).Campaign(ctx, "a")
	require.NoError(t, err)
	leader := next()
	assert.Equal(t, "a", leader.Value)
	assert.Equal(t, a.Term(), leader.Term)
	until := a.Until()
	require.True(t, waitUntil(func() bool { return a.Until().After(until) }), "a was renewed")
	require.NoError(t, a.Resign(ctx))

	expiring := nodes.client(t, Options{})
	b, err := expiring.NewElection("scheduler", ElectionOptions{TTL: ttl}).Campaign(ctx, "b")
	require.NoError(t, err)
	leader = next()
	assert.Equal(t, "b", leader.Value, "the second leader, not a renewal of the first")
	assert.Equal(t, b.Term(), leader.Term)
	require.NoError(t, expiring.Close()) // b's key is left to expire

	c, err := candidate(Options{}).Campaign(ctx, "c")
	require.NoError(t, err)
	leader = next()
	assert.Equal(t, "c", leader.Value)
	assert.Equal(t, c.Term(), leader.Term)
	require.NoError(t, c.Resign(ctx))
	cancel()
	for range observed {
	}
}

// A new leader whose fence is not committed yet shows its predecessor's
// term: Observe waits for the commit, which wakes it, and delivers the
// leader with its own term.
func TestElectionObserveWaitsForTheCommit(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	observed := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{}).Observe(ctx)
	a, err := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{}).Campaign(ctx, "a")
	require.NoError(t, err)
	leader := <-observed
	require.Equal(t, a.Term(), leader.Term)
	require.NoError(t, a.Resign(ctx))

	// The acquisition of the next leader, then its commit, written by hand.
	next := fmt.Sprint(a.Term() + 1)
	for _, server := range nodes.servers {
		server.Do(t, "SET", "scheduler", strings.Repeat("b", tokenLength)+" b", "PX", "10000")
	}
	for _, server := range nodes.servers {
		server.Do(t, "SET", "scheduler"+fenceKeySuffix, next)
	}
	select {
	case leader = <-observed:
		assert.Equal(t, "b", leader.Value)
		assert.Equal(t, a.Term()+1, leader.Term, "delivered before its commit")
	case <-ctx.Done():
		t.Fatal("the next leader was not observed")
	}
	cancel()
	for range observed {
	}
}

// Without key tracking (RESP2), Observe reads the nodes on a schedule and
// still delivers each leader.
func TestElectionObserveWithoutTracking(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = time.Second
	observed := nodes.client(t, Options{Protocol: ProtocolRESP2}).NewElection("scheduler", ElectionOptions{TTL: ttl}).Observe(ctx)
	candidate := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{TTL: ttl})
	for _, value := range []string{"a", "b"} {
		l, err := candidate.Campaign(ctx, value)
		require.NoError(t, err)
		select {
		case leader := <-observed:
			assert.Equal(t, value, leader.Value)
			assert.Equal(t, l.Term(), leader.Term)
		case <-ctx.Done():
			t.Fatalf("%s was not observed", value)
		}
		require.NoError(t, l.Resign(ctx))
	}
	cancel()
	for range observed {
	}
}

// Close ends every Observe: its channel closes, and its goroutine is
// gone when Close returns, with the leader's renewal.
func TestElectionCloseEndsObserve(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	goroutines := runtime.NumGoroutine()
	client, err := New(nodes.addresses, Options{})
	require.NoError(t, err)
	election := client.NewElection("scheduler", ElectionOptions{})
	l, err := election.Campaign(context.Background(), "a")
	require.NoError(t, err)
	observed := election.Observe(context.Background())
	assert.Equal(t, l.Term(), (<-observed).Term)
	require.NoError(t, client.Close())
	_, open := <-observed
	assert.False(t, open, "Observe's channel is closed")
	assert.True(t, isClosed(l.Done()), "the leadership ended with the Client")
	_, open = <-election.Observe(context.Background())
	assert.False(t, open, "an Observe after Close is closed at once")
	assertGoroutinesBackTo(t, goroutines)
}

// An observation in the leader's own Client leaves the leader's watch of
// its key alone: the key cut short from outside is still noticed at once,
// not at the next renewal (3.3 s away). The leader's keys are armed first,
// then the observation reads them, as it does on every change.
func TestElectionObserveKeepsTheLeadersWatch(t *testing.T) {
	redistest.RequireReal(t) // key tracking needs redis-server
	nodes := startCluster(t, 3, redistest.Options{})
	observer := &extendObserver{extensions: make(chan ExtendEvent, 4)}
	client := nodes.client(t, Options{Observer: observer})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	election := client.NewElection("scheduler", ElectionOptions{TTL: 10 * time.Second})
	l, err := election.Campaign(ctx, "a")
	require.NoError(t, err)
	defer l.Resign(context.Background())

	o := &observation{election: election, keys: []string{"scheduler", "scheduler" + fenceKeySuffix}, wake: make(chan struct{}, 1)}
	require.True(t, waitUntil(func() bool { _, armed := o.arm(ctx); return armed == 3 }), "the subscription connections track keys")
	h := &l.mutex.hold
	h.Mu.Lock()
	tag := h.WatchTag
	h.Mu.Unlock()
	l.mutex.arm(l.generation, tag, allNodes)
	views, armed := o.arm(ctx)
	require.Equal(t, 3, armed)
	leader, ok := leaderOf(views, client.need)
	require.True(t, ok)
	require.Equal(t, l.Term(), leader.Term)

	for i := range 2 {
		client.do(t, i, "PEXPIRE", "scheduler", "100")
	}
	select {
	case event := <-observer.extensions:
		require.NoError(t, event.Err, "the extension that answers the cut")
	case <-time.After(2 * time.Second):
		t.Fatal("the cut went unnoticed: no extension before the renewal's schedule")
	}
	assert.False(t, isClosed(l.Done()))
}

// An Observe in a leader's own Client still delivers every change: the
// leader's resignation, another Client's leader, and its own again.
func TestElectionObserveInTheLeadersClient(t *testing.T) {
	redistest.RequireReal(t) // key tracking needs redis-server
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	own := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{})
	other := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{})
	observed := own.Observe(ctx)
	for _, turn := range []struct {
		election *Election
		value    string
	}{{own, "a"}, {other, "b"}, {own, "c"}} {
		l, err := turn.election.Campaign(ctx, turn.value)
		require.NoError(t, err)
		select {
		case leader := <-observed:
			assert.Equal(t, turn.value, leader.Value)
			assert.Equal(t, l.Term(), leader.Term)
		case <-ctx.Done():
			t.Fatalf("%s was not observed", turn.value)
		}
		require.NoError(t, l.Resign(ctx))
	}
	cancel()
	for range observed {
	}
}
