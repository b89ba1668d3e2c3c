package redlock

import (
	"context"
	"fmt"
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
