package redlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unconfirmedObserver collects the releases the transport reported it
// could not confirm.
type unconfirmedObserver struct {
	NopObserver
	mu     sync.Mutex
	events []NodeErrorEvent
	seen   chan struct{} // one token per event, never blocks the sender
}

func newUnconfirmedObserver() *unconfirmedObserver {
	return &unconfirmedObserver{seen: make(chan struct{}, 64)}
}

func (o *unconfirmedObserver) OnNodeError(event NodeErrorEvent) {
	if !errors.Is(event.Err, ErrReleaseUnconfirmed) {
		return
	}
	o.mu.Lock()
	o.events = append(o.events, event)
	o.mu.Unlock()
	select {
	case o.seen <- struct{}{}:
	default:
	}
}

func (o *unconfirmedObserver) reported() []NodeErrorEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]NodeErrorEvent(nil), o.events...)
}

// slowThirdNode starts three servers, the third behind a proxy that can
// delay it, and returns a Client over them with the given node timeout,
// which the caller closes.
func slowThirdNode(t *testing.T, nodeTimeout time.Duration) ([]*redistest.Server, *faultnet.Proxy, *Client) {
	t.Helper()
	redistest.RequireReal(t)
	servers := redistest.StartN(t, 3, redistest.Options{})
	trustServers(t, servers...)
	slow := faultnet.New(t, servers[2].Addr())
	client, err := New([]string{servers[0].Addr(), servers[1].Addr(), slow.Addr()}, Options{NodeTimeout: nodeTimeout})
	require.NoError(t, err)
	return servers, slow, client
}

// keyGoneWithin reports whether key disappears from server within limit,
// looking through connections of its own, not the client's.
func keyGoneWithin(t *testing.T, server *redistest.Server, key string, limit time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(limit); ; {
		if server.Do(t, "EXISTS", key) == "0" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond) // polling a server, bounded
	}
}

// A node stalled while a lock is taken and released (SIGSTOP) answers
// neither: the quorum came from the others. The release is carried by the
// transport: when the node answers again, the key goes within a few round
// trips, although the client does nothing more.
func TestReleaseReachesAStalledNode(t *testing.T) {
	redistest.RequireReal(t)
	tests := []struct {
		name    string
		stalled time.Duration // how long the node stays stopped after the Unlock
	}{
		{name: "resumed at once", stalled: 0},
		// Longer than a node timeout and several dial timeouts: the
		// connection fails, and the release is sent again on a new one.
		{name: "resumed after a second", stalled: time.Second},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			cluster := startCluster(t, 5, redistest.Options{})
			client := cluster.client(t, Options{NodeTimeout: 50 * time.Millisecond, DialTimeout: 200 * time.Millisecond})
			ctx := context.Background()
			m := client.NewMutex("stalled", MutexOptions{TTL: 10 * time.Second})
			require.NoError(t, m.Lock(ctx)) // every connection is up
			require.NoError(t, m.Unlock(ctx))

			stalled := cluster.servers[4]
			stalled.Stop()
			require.NoError(t, m.Lock(ctx))
			time.Sleep(3 * 50 * time.Millisecond) // the scenario: work under the lock, longer than a node timeout
			require.NoError(t, m.Unlock(ctx))
			time.Sleep(test.stalled) // the scenario: the node stays stopped
			stalled.Cont()
			assert.True(t, keyGoneWithin(t, stalled, "stalled", 2*time.Second),
				"the release must reach the node once it answers again (the key's TTL is 30 s)")
		})
	}
}

// A release that cannot be delivered before its key's TTL has certainly
// ended is reported to the observer, naming the key and the node.
func TestUnconfirmedReleaseIsReported(t *testing.T) {
	redistest.RequireReal(t)
	cluster := startCluster(t, 3, redistest.Options{})
	observer := newUnconfirmedObserver()
	client := cluster.client(t, Options{NodeTimeout: 30 * time.Millisecond, DialTimeout: 100 * time.Millisecond, Observer: observer})
	ctx := context.Background()
	m := client.NewMutex("unconfirmed", MutexOptions{TTL: 300 * time.Millisecond})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	client.do(t, 2, "PING") // after the first release on that node's connection

	stalled := cluster.servers[2]
	stalled.Stop()
	defer stalled.Cont()
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	select {
	case <-observer.seen:
	case <-time.After(5 * time.Second):
		t.Fatal("the observer was not told of the release the stalled node never confirmed")
	}
	events := observer.reported()
	require.Len(t, events, 1)
	assert.Equal(t, "unconfirmed", events[0].Key)
	assert.Equal(t, OperationUnlock, events[0].Operation)
	assert.Equal(t, client.Addresses()[2], events[0].Address)
}

// After SCRIPT FLUSH on every node, an Unlock that returns on a quorum
// leaves no key behind on the slower node: the release needs no NOSCRIPT
// fallback that only a later reader would send.
func TestReleaseAfterScriptFlushReachesTheSlowNode(t *testing.T) {
	servers, slow, client := slowThirdNode(t, time.Second)
	t.Cleanup(func() { client.Close() })
	ctx := context.Background()
	m := client.NewMutex("flushed", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	for _, server := range servers {
		require.Equal(t, "OK", server.Do(t, "SCRIPT", "FLUSH"))
	}
	slow.Delay(20*time.Millisecond, 0)
	require.NoError(t, m.Unlock(ctx))
	assert.True(t, keyGoneWithin(t, servers[2], "flushed", 2*time.Second),
		"the slow node must release the key without further use of the client")
}

// An acquisition abandoned once the quorum was reached, which a node
// answers with NOSCRIPT after the release that followed it, is not
// replayed: a replay would run after the release and leave the released
// token on the node for a whole TTL.
func TestAbandonedAcquisitionIsNotReplayedAfterItsRelease(t *testing.T) {
	servers, slow, client := slowThirdNode(t, time.Second)
	t.Cleanup(func() { client.Close() })
	ctx := context.Background()
	m := client.NewMutex("multi:a", MutexOptions{TTL: 10 * time.Second, Keys: []string{"multi:b"}})

	// The slow node knows the release but not the multi-key acquisition.
	servers[2].Do(t, "SCRIPT", "FLUSH")
	servers[2].Do(t, "SCRIPT", "LOAD", protocol.Release.Source())
	slow.Delay(5*time.Millisecond, 5*time.Millisecond)
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	// Two commands through the client's own connection to the slow node:
	// the first reads the NOSCRIPT answer, the second comes after anything
	// that reading could have sent.
	client.do(t, 2, "PING")
	client.do(t, 2, "PING")
	assert.Equal(t, "0", servers[2].Do(t, "EXISTS", "multi:a", "multi:b"), "a replayed acquisition left the keys behind")
}

// Close right after Unlock, as `redlock run` does at exit, waits for the
// releases still in flight to the slower nodes.
func TestCloseWaitsForReleasesInFlight(t *testing.T) {
	servers, slow, client := slowThirdNode(t, 500*time.Millisecond)
	ctx := context.Background()
	m := client.NewMutex("closing", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	slow.Delay(0, 50*time.Millisecond) // the release arrives; its answer is late
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, client.Close(), "the release was confirmed within the wait")
	assert.Equal(t, "0", servers[2].Do(t, "EXISTS", "closing"))
}

// Close does not wait for a node that does not answer longer than a node
// timeout, and reports the release it could not confirm.
func TestCloseReportsReleasesItCouldNotConfirm(t *testing.T) {
	redistest.RequireReal(t)
	cluster := startCluster(t, 3, redistest.Options{})
	observer := newUnconfirmedObserver()
	// Close lets a dial already under way go on within its timeout (the
	// release may still land): the stalled node's connection may be in
	// one when Close begins, so the dial timeout is short too.
	client, err := New(cluster.addresses, Options{NodeTimeout: 100 * time.Millisecond, DialTimeout: 500 * time.Millisecond, Observer: observer})
	require.NoError(t, err)
	ctx := context.Background()
	m := client.NewMutex("closing", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	stalled := cluster.servers[2]
	stalled.Stop()
	defer stalled.Cont()
	require.NoError(t, m.Unlock(ctx))
	started := time.Now()
	err = client.Close()
	assert.Less(t, time.Since(started), 2*time.Second, "Close waits about a node timeout, not more")
	assert.ErrorIs(t, err, ErrReleaseUnconfirmed)
	require.Len(t, observer.reported(), 1)
	assert.Equal(t, "closing", observer.reported()[0].Key)
}
