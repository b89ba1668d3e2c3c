package redlock

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
)

// Candidates of several clients take turns: one leads at a time, and each
// term is larger than the one before it.
func TestElectionTermsStrictlyIncrease(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	const candidates, turns = 4, 3
	var (
		leading atomic.Int32
		mu      sync.Mutex
		terms   []int64
		values  []string
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var group sync.WaitGroup
	for candidate := range candidates {
		election := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{TTL: 2 * time.Second})
		value := fmt.Sprintf("candidate-%d", candidate)
		group.Go(func() {
			for range turns {
				l, err := election.Campaign(ctx, value)
				if !assert.NoError(t, err) {
					return
				}
				if n := leading.Add(1); n != 1 {
					t.Errorf("%d leaders at once", n)
				}
				mu.Lock()
				terms, values = append(terms, l.Term()), append(values, l.Value())
				mu.Unlock()
				leading.Add(-1)
				assert.NoError(t, l.Resign(ctx))
			}
		})
	}
	group.Wait()
	require.Len(t, terms, candidates*turns)
	for i := 1; i < len(terms); i++ {
		assert.Greater(t, terms[i], terms[i-1], "term %d (%s) after term %d (%s)", terms[i], values[i], terms[i-1], values[i-1])
	}
}

// Leader reads who leads from a quorum: nobody, the leader with its value
// and term, nobody again after Resign.
func TestElectionLeaderReadsTheQuorum(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	reader := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{})
	_, err := reader.Leader(ctx)
	require.ErrorIs(t, err, ErrNoLeader)

	candidate := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{})
	l, err := candidate.Campaign(ctx, "host-1 pid 42")
	require.NoError(t, err)
	leader, err := reader.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "host-1 pid 42", leader.Value)
	assert.Equal(t, l.Term(), leader.Term)
	assert.Positive(t, leader.TTL)

	// One node's key gone: the other two are still a quorum.
	nodes.servers[0].Do(t, "DEL", "scheduler")
	leader, err = reader.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, l.Term(), leader.Term)

	require.NoError(t, l.Resign(ctx))
	_, err = reader.Leader(ctx)
	assert.ErrorIs(t, err, ErrNoLeader)
}

// A leader whose process is paused past its validity, while another
// candidate takes over, finds Done closed as soon as it runs again, before
// its timers have run, and the next leader's term is larger. The pause is
// a clock that stops, then jumps: timers set by it do not fire meanwhile,
// and nothing renews the leader's key, which expires on the nodes.
func TestElectionPausedLeaderSeesDoneClosed(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	clock := newManualClock()
	// RESP2: no key tracking, which would tell the paused leader of its
	// key's expiry as soon as it happens.
	paused := nodes.client(t, Options{clock: clock, Protocol: ProtocolRESP2})
	const ttl = 500 * time.Millisecond
	first, err := paused.NewElection("scheduler", ElectionOptions{TTL: ttl}).Campaign(ctx, "paused")
	require.NoError(t, err)
	done := first.Done()
	pausedAt := time.Now()

	next, err := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{TTL: ttl}).Campaign(ctx, "next")
	require.NoError(t, err, "the paused leader's key expires")
	require.False(t, isClosed(done), "paused: nothing ran")
	assert.Greater(t, next.Term(), first.Term())

	clock.Advance(time.Since(pausedAt))
	assert.True(t, isClosed(first.Done()), "the paused leader resumed: Done must be closed at once")
	assert.True(t, isClosed(done))
}

// A leader cut off from the nodes sees Done closed before another
// candidate's Campaign returns: its leadership ends before its key
// expires on the nodes.
func TestElectionCutOffLeaderEndsBeforeTheNextLeads(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	var proxies []*faultnet.Proxy
	var addresses []string
	for _, address := range nodes.addresses {
		proxy := faultnet.New(t, address)
		proxies = append(proxies, proxy)
		addresses = append(addresses, proxy.Addr())
	}
	cutOff, err := New(addresses, Options{NodeTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { cutOff.Close() })
	ctx := context.Background()
	const ttl = time.Second
	first, err := cutOff.NewElection("scheduler", ElectionOptions{TTL: ttl}).Campaign(ctx, "cut off")
	require.NoError(t, err)
	done := first.Done()
	for _, proxy := range proxies {
		proxy.Blackhole()
	}

	next, err := nodes.client(t, Options{}).NewElection("scheduler", ElectionOptions{TTL: ttl}).Campaign(ctx, "next")
	require.NoError(t, err)
	assert.True(t, isClosed(done), "another candidate leads while the cut-off leader's Done is open")
	assert.Greater(t, next.Term(), first.Term())
	require.NoError(t, next.Resign(ctx))
}

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

// Run leads, campaigns again after a lost leadership, and returns lead's
// error once lead returns while leading.
func TestElectionRunCampaignsAgainAfterALoss(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := nodes.client(t, Options{})
	election := client.NewElection("scheduler", ElectionOptions{TTL: time.Second})
	var terms []int64
	err := election.Run(ctx, "runner", func(leadCtx context.Context, l *Leadership) error {
		terms = append(terms, l.Term())
		if len(terms) == 1 {
			_, err := client.ForceRelease(ctx, "scheduler") // taken away: the renewal finds it gone
			require.NoError(t, err)
			<-leadCtx.Done()
			assert.ErrorIs(t, context.Cause(leadCtx), ErrLockLost)
			return leadCtx.Err()
		}
		return fmt.Errorf("done in term %d", l.Term())
	})
	require.Len(t, terms, 2)
	assert.Greater(t, terms[1], terms[0])
	assert.EqualError(t, err, fmt.Sprintf("done in term %d", terms[1]))
	_, err = election.Leader(ctx)
	assert.ErrorIs(t, err, ErrNoLeader, "Run resigned")
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
	h.mu.Lock()
	tag := h.watchTag
	h.mu.Unlock()
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
