package redlock

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock/internal/waiting"
)

// The servers, observers and waiters of the tests of waiting.

// resp2Only starts a server that answers HELLO with an error, as servers
// before Redis 6 do: its connections speak RESP2 only.
var resp2Only = redistest.Options{ExtraArgs: []string{"--rename-command", "HELLO", ""}}

// noChannelRights starts a server with the user "locker", who may run
// every command on every key but, as Redis 7 gives a new user, use no
// pub/sub channel.
var noChannelRights = redistest.Options{ACLUsers: []string{"locker on >pw ~* +@all"}}

// startMixedCluster starts resp2 RESP2-only nodes, then resp3 ordinary
// ones, stated new.
func startMixedCluster(t *testing.T, resp2, resp3 int) *cluster {
	t.Helper()
	c := &cluster{}
	if resp2 > 0 {
		c.servers = append(c.servers, redistest.StartN(t, resp2, resp2Only)...)
	}
	if resp3 > 0 {
		c.servers = append(c.servers, redistest.StartN(t, resp3, redistest.Options{})...)
	}
	for _, server := range c.servers {
		c.addresses = append(c.addresses, server.Addr())
	}
	trustServers(t, c.servers...)
	return c
}

// waitObserver tells a test of each failed acquisition attempt, and keeps
// the node errors.
type waitObserver struct {
	NopObserver
	failed     chan struct{} // one token per failed attempt; dropped when full
	mu         sync.Mutex
	nodeErrors []NodeErrorEvent
}

func newWaitObserver() *waitObserver { return &waitObserver{failed: make(chan struct{}, 64)} }

func (o *waitObserver) OnAcquire(event AcquireEvent) {
	if event.Err != nil {
		select {
		case o.failed <- struct{}{}:
		default:
		}
	}
}

func (o *waitObserver) OnNodeError(event NodeErrorEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nodeErrors = append(o.nodeErrors, event)
}

// subscriptionReports returns what the observer was told about the
// subscription of the node at address.
func (o *waitObserver) subscriptionReports(address string) []NodeErrorEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	var reports []NodeErrorEvent
	for _, event := range o.nodeErrors {
		if event.Operation == OperationSubscribe && event.Address == address {
			reports = append(reports, event)
		}
	}
	return reports
}

// drain forgets the failed attempts reported so far.
func (o *waitObserver) drain() {
	for {
		select {
		case <-o.failed:
		default:
			return
		}
	}
}

// awaitFailures returns once count more attempts failed.
func (o *waitObserver) awaitFailures(t *testing.T, count int) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for range count {
		select {
		case <-o.failed:
		case <-timeout.C:
			require.FailNow(t, "the waiter made no attempt in 10 s")
		}
	}
}

// awaitQuiet returns once no attempt has failed for quiet: the waiter
// sleeps, and nothing is on its way to wake it.
func (o *waitObserver) awaitQuiet(t *testing.T, quiet time.Duration) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case <-o.failed:
		case <-time.After(quiet):
			return
		case <-timeout.C:
			require.FailNow(t, "the waiter kept trying for 10 s")
		}
	}
}

// awaitSubscribers polls the node until count clients subscribe to channel,
// for at most 10 s.
func awaitSubscribers(t *testing.T, server *redistest.Server, channel string, count int) {
	t.Helper()
	want := "[" + channel + " " + strconv.Itoa(count) + "]"
	for deadline := time.Now().Add(10 * time.Second); server.Do(t, "PUBSUB", "NUMSUB", channel) != want; time.Sleep(5 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "%s: no %d subscribers to %s in 10 s", server.Addr(), count, channel)
	}
}

// lockResult is the end of a Lock: its error and when it returned.
type lockResult struct {
	err error
	at  time.Time
}

// startWaiting runs m.Lock on a goroutine and returns once two attempts
// have failed: the first look, and the look after subscribing. The Lock
// then waits for a release, until ctx ends.
func startWaiting(t *testing.T, ctx context.Context, m *Mutex, observer *waitObserver) <-chan lockResult {
	t.Helper()
	observer.drain()
	locked := make(chan lockResult, 1)
	go func() {
		err := m.Lock(ctx)
		locked <- lockResult{err: err, at: time.Now()}
	}()
	observer.awaitFailures(t, 2)
	return locked
}

// handoffDelays hands a lock from holder to waiter rounds times and
// returns, for each handoff, the time from the start of the holder's
// Unlock to the return of the waiter's Lock. The holder unlocks once the
// waiter is waiting for the release.
func handoffDelays(t *testing.T, holder, waiter *Mutex, observer *waitObserver, rounds int) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var delays []time.Duration
	for range rounds {
		require.NoError(t, holder.Lock(ctx))
		locked := startWaiting(t, ctx, waiter, observer)
		start := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		result := <-locked
		require.NoError(t, result.err)
		delays = append(delays, result.at.Sub(start))
		require.NoError(t, waiter.Unlock(ctx))
	}
	return delays
}

// median returns the middle of durations.
func median(durations []time.Duration) time.Duration {
	sorted := slices.Clone(durations)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// connectionsReceived returns the number of connections the server has
// accepted, this one included.
func connectionsReceived(t *testing.T, server *redistest.Server) int {
	t.Helper()
	for line := range strings.Lines(server.Do(t, "INFO", "stats")) {
		if value, found := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); found {
			count, err := strconv.Atoi(value)
			require.NoError(t, err)
			return count
		}
	}
	require.FailNow(t, "INFO stats has no total_connections_received")
	return 0
}

// connectionsDuring returns how many connections each server accepted from
// others than this function during window.
func connectionsDuring(t *testing.T, servers []*redistest.Server, window time.Duration) []int {
	t.Helper()
	before := make([]int, len(servers))
	for i, server := range servers {
		before[i] = connectionsReceived(t, server)
	}
	time.Sleep(window) // the window to count in, not a synchronisation
	counts := make([]int, len(servers))
	for i, server := range servers {
		counts[i] = connectionsReceived(t, server) - before[i] - 1 // less the look itself
	}
	return counts
}

// settled reports whether each of mutexes waits for a release, its
// subscriptions confirmed, with nothing else due, all at one moment.
func settled(n *waiting.Notifier, mutexes []*Mutex) bool {
	waiters := make([]*waiting.Waiter, len(mutexes))
	for i, m := range mutexes {
		waiters[i] = m.waiter()
	}
	return n.Settled(waiters...)
}

// waiter returns the waiter of the wait state lent to m's Lock under way,
// or nil when none is lent.
func (m *Mutex) waiter() *waiting.Waiter {
	if w := m.wait.Load(); w != nil {
		return &w.Waiter
	}
	return nil
}
