package redlock

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/resp"
)

// cluster is a set of nodes started for one test.
type cluster struct {
	servers   []*redistest.Server
	addresses []string
}

// startCluster starts n servers and states them new to the quarantine,
// as the test started them empty: see startUntrusted.
func startCluster(t testing.TB, n int, options redistest.Options) *cluster {
	t.Helper()
	c := startUntrusted(t, n, options)
	trustServers(t, c.servers...)
	return c
}

// startUntrusted starts n servers whose epoch markers are not written:
// a client's first contact finds them as a restart would.
func startUntrusted(t testing.TB, n int, options redistest.Options) *cluster {
	t.Helper()
	c := &cluster{servers: redistest.StartN(t, n, options)}
	for _, server := range c.servers {
		c.addresses = append(c.addresses, server.Addr())
	}
	return c
}

// trustServers writes each server's epoch marker as TrustNodes does: the
// test's statement that it started them empty.
func trustServers(t testing.TB, servers ...*redistest.Server) {
	t.Helper()
	for _, server := range servers {
		server.Do(t, "EVAL", quarantine.EpochScript.Source(), "1", epochKey, "trust", "")
	}
}

// client returns a Client over the cluster, closed when the test ends,
// with its connections up and its nodes' markers read: the scenarios that
// stop a node count on commands reaching it before it stops.
func (c *cluster) client(t testing.TB, options Options) *Client {
	t.Helper()
	client, err := New(c.addresses, options)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, err := range client.group.Connect(ctx) {
		require.NoError(t, err, "node %d", i)
	}
	if client.quarantine != nil {
		client.quarantine.Verify(context.Background()) // the markers read, as after a first lock
	}
	return client
}

// do runs a command on node i through the client's own connection, so that
// it is ordered after every command the client sent to that node.
func (c *Client) do(t testing.TB, i int, arguments ...string) resp.Value {
	t.Helper()
	request := mux.NewRequest(arguments...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.group.Do(ctx, i, request))
	require.NoError(t, request.Err())
	return request.Reply()
}

// values returns the value of key on every node ("" where it is missing).
func (c *Client) values(t testing.TB, key string) []string {
	t.Helper()
	values := make([]string, c.group.Len())
	for i := range values {
		values[i] = string(c.do(t, i, "GET", key).Str)
	}
	return values
}

// commandCalls returns how often node i ran a command, from INFO
// commandstats.
func (c *Client) commandCalls(t testing.TB, i int, command string) int {
	t.Helper()
	info := string(c.do(t, i, "INFO", "commandstats").Str)
	for _, line := range strings.Split(info, "\n") {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+command+":calls="); found {
			calls, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return calls
		}
	}
	return 0
}

// repeat returns a slice of n copies of value.
func repeat[T any](value T, n int) []T {
	values := make([]T, n)
	for i := range values {
		values[i] = value
	}
	return values
}

// stepClock is a clock that moves forward by step at every reading, so that
// every round appears to take step; after setSteps, only at the next few
// readings.
type stepClock struct {
	mu    sync.Mutex
	now   time.Time
	step  time.Duration
	moves int // readings that still move the clock; negative: all of them
}

func newStepClock(step time.Duration) *stepClock {
	return &stepClock{now: time.Now(), step: step, moves: -1}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.moves != 0 {
		c.now = c.now.Add(c.step)
		if c.moves > 0 {
			c.moves--
		}
	}
	return c.now
}

func (c *stepClock) setStep(step time.Duration) { c.setSteps(step, -1) }

// setSteps makes the next n readings move the clock by step, and the
// readings after them not at all.
func (c *stepClock) setSteps(step time.Duration, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step, c.moves = step, n
}

// recordingObserver keeps the events it is told of.
type recordingObserver struct {
	NopObserver
	mu       sync.Mutex
	acquires []AcquireEvent
	onFailed func(attempt int) // called after each failed acquisition
}

func (o *recordingObserver) OnAcquire(event AcquireEvent) {
	o.mu.Lock()
	o.acquires = append(o.acquires, event)
	failed := 0
	for _, e := range o.acquires {
		if e.Err != nil {
			failed++
		}
	}
	onFailed := o.onFailed
	o.mu.Unlock()
	if event.Err != nil && onFailed != nil {
		onFailed(failed)
	}
}

// errorsIsLost reports whether err says the hold was lost.
func errorsIsLost(err error) bool { return errors.Is(err, ErrLockLost) }

// assertGoroutinesBackTo fails the test unless the number of goroutines
// comes back to baseline or below. Goroutines that have been told to stop
// (a timer's callback, a context's AfterFunc) may take a moment to return,
// so it waits for the count, for at most five seconds, and prints the
// stacks of what is left when it gives up.
func assertGoroutinesBackTo(t *testing.T, baseline int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > baseline; runtime.Gosched() {
		if time.Now().After(deadline) {
			stacks := make([]byte, 1<<20)
			t.Errorf("goroutines: %d after Close, %d before\n%s", runtime.NumGoroutine(), baseline, stacks[:runtime.Stack(stacks, true)])
			return
		}
	}
}

// onEveryNode waits until every node of the cluster has key: a hold that
// returned once a quorum confirmed may still be on its way to the others,
// and a waiter that meets such a node sees a split vote, after which it
// retries at its retry delay instead of listening for the release.
func onEveryNode(t *testing.T, c *cluster, key string) {
	t.Helper()
	require.True(t, waitUntil(func() bool {
		for _, server := range c.servers {
			if server.Do(t, "EXISTS", key) != "1" {
				return false
			}
		}
		return true
	}), "%s is not on every node", key)
}
