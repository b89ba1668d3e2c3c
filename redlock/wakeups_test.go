package redlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// handoffLimit bounds the wait of a handoff in these tests: a notification
// arrives within milliseconds, and the waiters' own retries are an hour
// apart, so a waiter that no notification wakes fails with its context.
const handoffLimit = 2 * time.Second

// handOff runs one handoff from holder to waiter: holder locks, waiter
// starts waiting (see startWaiting) and makes no more attempts, holder
// unlocks. It returns the error of the waiter's Lock, bounded by
// handoffLimit, and the time from the start of the Unlock to the return of
// the Lock. The waiter unlocks again.
func handOff(t *testing.T, holder, waiter *Mutex, observer *waitObserver) (time.Duration, error) {
	t.Helper()
	require.NoError(t, holder.Lock(context.Background()))
	awaitNodes(t, holder)
	ctx, cancel := context.WithTimeout(context.Background(), handoffLimit)
	defer cancel()
	locked := startWaiting(t, ctx, waiter, observer)
	observer.awaitQuiet(t, 50*time.Millisecond) // no look on its way: only a release can wake it
	start := time.Now()
	require.NoError(t, holder.Unlock(context.Background()))
	result := <-locked
	if result.err == nil {
		require.NoError(t, waiter.Unlock(context.Background()))
		awaitNodes(t, waiter)
	}
	return result.at.Sub(start), result.err
}

// awaitNodes returns once every node has run the commands that m's Client
// sent it: a command on the Client's own connection to a node runs after
// them. Lock and Unlock return once a quorum of nodes answered; a node
// whose command is still on its way would let another client's attempt
// get there first, a split vote, whose backoff is deaf to notifications.
func awaitNodes(t *testing.T, m *Mutex) {
	t.Helper()
	for i := range m.client.addresses {
		m.client.do(t, i, "PING")
	}
}

// Every release of a hold wakes a waiter, also when holds repeat their
// token (MutexOptions.Token) while the waiter stays registered: each
// release is announced under an identity of its own, so the second release
// of a token is not taken for the first. The waiter stays because the
// first release cannot let it in: it also locks a key that somebody else
// holds, removed afterwards without an announcement.
func TestEveryReleaseOfARepeatedTokenWakesAWaiter(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	tests := []struct {
		name       string
		sameClient bool // the holder and the waiter share a Client
	}{
		{name: "holder in another client"},
		{name: "holder in the same client", sameClient: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			observer := newWaitObserver()
			waiterClient := nodes.client(t, Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour})
			holderClient := nodes.client(t, Options{})
			if tt.sameClient {
				holderClient = waiterClient
			}
			holder := holderClient.NewMutex("k", MutexOptions{Token: "a-token-of-the-caller"})
			waiter := waiterClient.NewMutex("k", MutexOptions{Keys: []string{"other"}})
			for _, server := range nodes.servers {
				server.Do(t, "SET", "other", "somebody", "PX", "60000")
			}
			require.NoError(t, holder.Lock(context.Background()))
			awaitNodes(t, holder)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			locked := startWaiting(t, ctx, waiter, observer)

			require.NoError(t, holder.Unlock(context.Background()))
			observer.awaitFailures(t, 1) // woken, and refused by "other"
			observer.awaitQuiet(t, 100*time.Millisecond)
			for _, server := range nodes.servers {
				server.Do(t, "DEL", "other")
			}
			require.NoError(t, holder.Lock(context.Background()))
			awaitNodes(t, holder)
			start := time.Now()
			require.NoError(t, holder.Unlock(context.Background()))
			select {
			case result := <-locked:
				require.NoError(t, result.err)
				t.Logf("the second release of the token: handoff %v", result.at.Sub(start))
				require.NoError(t, waiter.Unlock(context.Background()))
				awaitNodes(t, waiter)
			case <-time.After(handoffLimit):
				require.FailNow(t, "the second release of the token woke no waiter", "in %v", handoffLimit)
			}
		})
	}
}

// A waiter blocked by any of its keys is woken by the release of that key,
// whether a single-key or a multi-key lock held it: the release announces
// every key it released, and a waiter listens for every key it locks.
func TestMultiKeyWaiterWakesOnTheReleaseOfAnyOfItsKeys(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	tests := []struct {
		name             string
		holder, waiter   string
		holdKeys, others []string // MutexOptions.Keys of the holder and of the waiter
	}{
		{name: "multi-key waiter, its second key held alone", holder: "b", waiter: "a", others: []string{"b"}},
		{name: "single-key waiter, its key second in a multi-key hold", holder: "x", holdKeys: []string{"b"}, waiter: "b"},
		{name: "multi-key waiter and hold sharing their second key", holder: "x", holdKeys: []string{"b"}, waiter: "a", others: []string{"b"}},
		{name: "multi-key waiter and hold with the keys in other orders", holder: "x", holdKeys: []string{"b", "a"}, waiter: "a", others: []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			observer := newWaitObserver()
			holder := nodes.client(t, Options{}).NewMutex(tt.holder, MutexOptions{Keys: tt.holdKeys})
			waiter := nodes.client(t, Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}).
				NewMutex(tt.waiter, MutexOptions{Keys: tt.others})
			delay, err := handOff(t, holder, waiter, observer)
			t.Logf("handoff %v", delay)
			require.NoError(t, err, "the release of the key that blocked the waiter did not wake it")
		})
	}
}

// attemptTimes records when each acquisition attempt started and ended.
type attemptTimes struct {
	NopObserver
	mu       sync.Mutex
	attempts []attemptTime
	added    chan struct{} // one token per attempt; dropped when full
}

type attemptTime struct{ start, end time.Time }

func newAttemptTimes() *attemptTimes {
	return &attemptTimes{added: make(chan struct{}, 64)}
}

func (o *attemptTimes) OnAcquire(event AcquireEvent) {
	end := time.Now()
	o.mu.Lock()
	o.attempts = append(o.attempts, attemptTime{start: end.Add(-event.Elapsed), end: end})
	o.mu.Unlock()
	select {
	case o.added <- struct{}{}:
	default:
	}
}

// await returns once count attempts have been made in all, for at most
// 10 s.
func (o *attemptTimes) await(t *testing.T, count int) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		o.mu.Lock()
		made := len(o.attempts)
		o.mu.Unlock()
		if made >= count {
			return
		}
		select {
		case <-o.added:
		case <-timeout.C:
			require.FailNow(t, "no attempts in 10 s", "%d attempts of %d", made, count)
		}
	}
}

// reset forgets the attempts recorded so far.
func (o *attemptTimes) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.attempts = nil
}

// gaps returns the time from the end of each attempt to the start of the
// next.
func (o *attemptTimes) gaps() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var gaps []time.Duration
	for i := 1; i < len(o.attempts); i++ {
		gaps = append(gaps, o.attempts[i].start.Sub(o.attempts[i-1].end))
	}
	return gaps
}

// The gap between two attempts of a Lock follows the rule of
// Options.RetryDelayMin: the retry delay d while releases cannot be heard;
// while they can, the wait for a release, which lasts 8·d unless a cause
// ends it: the release of a key (none here: the lock stays held), or once
// the confirmation of a new subscription by a quorum of nodes. No
// wake-up that cannot win starts a round: no gap is shorter than the rule
// allows, and there are no back-to-back looks.
func TestRetrySpacingFollowsTheRule(t *testing.T) {
	redistest.RequireReal(t)
	const delay = 30 * time.Millisecond // RetryDelayMin = RetryDelayMax
	const measured = 2 * time.Millisecond
	const slack = 100 * time.Millisecond
	tests := []struct {
		name    string
		nodes   func(t *testing.T) *cluster
		options Options
		joins   bool          // another waiter of the Client already listens for the key
		first   time.Duration // the upper bound of the first gap, when it may be shorter than the others
		gap     time.Duration // every other gap
	}{
		{name: "a new subscription: one look once a quorum confirmed it, then the fallback",
			nodes: func(t *testing.T) *cluster { return startCluster(t, 3, redistest.Options{}) }, first: 8 * delay, gap: 8 * delay},
		{name: "joining a confirmed subscription: no look, the fallback",
			nodes: func(t *testing.T) *cluster { return startCluster(t, 3, redistest.Options{}) }, joins: true, gap: 8 * delay},
		{name: "a quorum of nodes RESP2 only: the retry delay",
			nodes: func(t *testing.T) *cluster { return startMixedCluster(t, 2, 1) }, gap: delay},
		{name: "Options.Protocol RESP2: the retry delay",
			nodes:   func(t *testing.T) *cluster { return startMixedCluster(t, 0, 3) },
			options: Options{Protocol: ProtocolRESP2}, gap: delay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := tt.nodes(t)
			holder := nodes.client(t, tt.options).NewMutex("k", MutexOptions{TTL: 10 * time.Second})
			require.NoError(t, holder.Lock(context.Background()))
			awaitNodes(t, holder)
			observer := newAttemptTimes()
			options := tt.options
			options.RetryDelayMin, options.RetryDelayMax = delay, delay
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var done sync.WaitGroup
			defer done.Wait()
			defer cancel()
			options.Observer = observer
			client := nodes.client(t, options)
			if tt.joins {
				// The first waiter of the Client makes the subscription and
				// looks once more; its own retries are hours apart.
				first := client.NewMutex("k", MutexOptions{RetryDelayMin: time.Hour, RetryDelayMax: time.Hour})
				done.Go(func() { _ = first.Lock(ctx) })
				observer.await(t, 2)
				for _, server := range nodes.servers {
					awaitSubscribers(t, server, releasedChannelPrefix+"k", 1)
				}
				observer.reset()
			}
			waiter := client.NewMutex("k", MutexOptions{})
			done.Go(func() { _ = waiter.Lock(ctx) })
			observer.await(t, 5)
			cancel()
			gaps := observer.gaps()[:4]
			t.Logf("gaps between attempts: %v", gaps)
			for i, gap := range gaps {
				low, high := tt.gap, tt.gap+slack
				if i == 0 && tt.first > 0 {
					low, high = 0, tt.first
				}
				assert.GreaterOrEqual(t, gap, low-measured, "gap %d of %v", i+1, gaps)
				assert.LessOrEqual(t, gap, high, "gap %d of %v", i+1, gaps)
			}
		})
	}
}

// A node's subscription confirmed again after its connection was replaced
// wakes a waiter: a release may have gone unheard while it was down. Here
// the lock is freed without an announcement, so only that look can find
// it free; the waiter's own retries are hours apart.
func TestRenewedSubscriptionWakesAWaiter(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	for _, server := range nodes.servers {
		server.Do(t, "SET", "k", "somebody", "PX", "60000")
	}
	observer := newWaitObserver()
	waiter := nodes.client(t, Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}).NewMutex("k", MutexOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	locked := startWaiting(t, ctx, waiter, observer)
	observer.awaitQuiet(t, 50*time.Millisecond)
	for _, server := range nodes.servers {
		server.Do(t, "DEL", "k")
	}
	assert.Equal(t, "1", nodes.servers[0].Do(t, "CLIENT", "KILL", "TYPE", "pubsub"))
	result := <-locked
	require.NoError(t, result.err)
	require.NoError(t, waiter.Unlock(context.Background()))
}

// Item 11 of issue 13: a holder that simply expires announces nothing. A
// waiting Lock learns from its refused attempt how long a quorum of nodes
// will go on refusing, and tries again when that ends, not at its
// fallback (here 40 s, past the context). One attempt suffices then: the
// bound is the quorum's, the second shortest of three TTLs, not the
// shortest.
func TestWaiterTriesAgainWhenTheHolderExpiresOnAQuorum(t *testing.T) {
	for _, keys := range [][]string{nil, {"expiring:b"}} {
		name := "one key"
		if keys != nil {
			name = "two keys"
		}
		t.Run(name, func(t *testing.T) {
			nodes := startCluster(t, 3, redistest.Options{})
			observer := &recordingObserver{}
			client := nodes.client(t, Options{RetryDelayMin: 5 * time.Second, RetryDelayMax: 5 * time.Second, Observer: observer})
			last := "expiring:a"
			if keys != nil {
				last = keys[0]
			}
			for i, ttl := range []string{"300", "500", "30000"} {
				client.do(t, i, "SET", last, "another holder", "PX", ttl)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			m := client.NewMutex("expiring:a", MutexOptions{Keys: keys})
			require.NoError(t, m.Lock(ctx), "woken when a quorum of nodes stopped refusing")
			assert.Equal(t, m.Token(), client.values(t, last)[1], "node 1's key had expired")
			require.NoError(t, m.Unlock(context.Background()))

			observer.mu.Lock()
			defer observer.mu.Unlock()
			failed := 0
			for i, event := range observer.acquires {
				assert.Equal(t, i+1, event.Attempt, "the attempts of one Lock are counted")
				if event.Err != nil {
					failed++
				}
			}
			// The first attempt, and the look once the subscription was
			// confirmed; the third waits for the quorum and wins.
			assert.LessOrEqual(t, failed, 2, "no attempt wasted before the quorum's keys expired")
		})
	}
}
