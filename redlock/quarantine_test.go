package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
)

// quarantined reports whether err holds a node outcome quarantined by
// the Client's quarantine.
func quarantined(err error) bool {
	var failure *QuorumError
	if !errors.As(err, &failure) {
		return false
	}
	for _, node := range failure.Nodes {
		if node.Outcome == OutcomeQuarantined && errors.Is(node.Err, ErrQuarantined) {
			return true
		}
	}
	return false
}

// trustedCluster starts three real servers and states them new.
func trustedCluster(t *testing.T) *cluster {
	t.Helper()
	redistest.RequireReal(t) // restarts, and INFO in scripts
	return startCluster(t, 3, redistest.Options{})
}

// Redlock's restart hazard: A holds the lock on nodes 0 and 1 (node 2
// did not answer), node 1 restarts without its data, and B asks nodes 1
// and 2. Without the quarantine B gets the lock while A's is valid; with
// it, node 1's vote does not count until MaxTTL has passed.
func TestQuarantineKeepsARestartedNodeOutOfTheLocks(t *testing.T) {
	nodes := trustedCluster(t)
	ctx := context.Background()
	options := Options{MaxTTL: 10 * time.Second}
	var proxied []string
	for i, server := range nodes.servers {
		proxy := faultnet.New(t, server.Addr())
		if i == 2 {
			proxy.Partition()
		}
		proxied = append(proxied, proxy.Addr())
	}
	a, err := New(proxied, options)
	require.NoError(t, err)
	defer a.Close()
	held := a.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, held.Lock(ctx), "A holds nodes 0 and 1")

	nodes.servers[1].Kill9()
	nodes.servers[1].Wipe()
	nodes.servers[1].Restart(t)

	b := nodes.client(t, options)
	err = b.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second}).TryLock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired, "B would hold the lock A holds")
	assert.True(t, quarantined(err), "node 1 is quarantined: %v", err)

	unguarded := nodes.client(t, Options{Quarantine: QuarantineOff})
	m := unguarded.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.TryLock(ctx), "without the quarantine, the violation")
	require.NoError(t, m.Unlock(ctx))
}

// The quarantine ends when the marker is older than MaxTTL and its drift
// allowance by the node's clock: the node votes again, and a Lock that
// waits gets the lock then.
func TestQuarantineEndsAfterMaxTTL(t *testing.T) {
	nodes := trustedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, i := range []int{0, 1} {
		nodes.servers[i].Kill9()
		nodes.servers[i].Wipe()
		nodes.servers[i].Restart(t)
	}
	// The quarantine counts from the restart (the server's uptime): a
	// MaxTTL of seconds keeps the first attempt inside it on a slow machine.
	observer := &failedAttempts{failed: make(chan struct{}, 64)}
	client := nodes.client(t, Options{MaxTTL: 3 * time.Second, Observer: observer,
		RetryDelayMin: 20 * time.Millisecond, RetryDelayMax: 40 * time.Millisecond})
	m := client.NewMutex("after", MutexOptions{TTL: 3 * time.Second})
	err := m.TryLock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired, "two of three nodes restarted empty")
	assert.True(t, quarantined(err), "%v", err)
	start := time.Now()
	require.NoError(t, m.Lock(ctx))
	assert.Less(t, time.Since(start), 15*time.Second)
	require.NoError(t, m.Unlock(ctx))
}

// Every client reaches the same verdict from the node's marker, whether it
// was connected before the restart or connects after it.
func TestQuarantineVerdictIsTheSameForEveryClient(t *testing.T) {
	nodes := trustedCluster(t)
	ctx := context.Background()
	options := Options{MaxTTL: 10 * time.Second}
	before := nodes.client(t, options)
	m := before.NewMutex("shared", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))

	for _, i := range []int{0, 1} {
		nodes.servers[i].Kill9()
		nodes.servers[i].Wipe()
		nodes.servers[i].Restart(t)
	}
	after := nodes.client(t, options)
	for name, client := range map[string]*Client{"connected before": before, "connected after": after} {
		err := client.NewMutex("shared", MutexOptions{TTL: 10 * time.Second, MaxTries: 2, RetryDelayMin: time.Millisecond, RetryDelayMax: time.Millisecond}).Lock(ctx)
		require.ErrorIs(t, err, ErrNotAcquired, name)
		assert.True(t, quarantined(err), "%s: %v", name, err)
	}
}

// A quarantined node's vote does not count, but the releases still reach
// it: a hold won on the other nodes leaves no key behind on it.
func TestQuarantinedNodeStillGetsReleases(t *testing.T) {
	nodes := trustedCluster(t)
	ctx := context.Background()
	nodes.servers[2].Kill9()
	nodes.servers[2].Wipe()
	nodes.servers[2].Restart(t)
	client := nodes.client(t, Options{MaxTTL: 10 * time.Second})
	m := client.NewMutex("released", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx), "nodes 0 and 1 are a quorum")
	assert.Equal(t, "1", nodes.servers[2].Do(t, "EXISTS", "released"), "the acquisition reached the quarantined node")
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, "0", nodes.servers[2].Do(t, "EXISTS", "released"), "and so did the release")
}

// Fresh servers have no marker: quarantined, until the operator states
// them new.
func TestTrustNodesLetsNewNodesVote(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startUntrusted(t, 3, redistest.Options{})
	ctx := context.Background()
	client := nodes.client(t, Options{MaxTTL: 10 * time.Second})
	m := client.NewMutex("fresh", MutexOptions{TTL: 10 * time.Second})
	err := m.TryLock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.True(t, quarantined(err), "%v", err)

	assert.Equal(t, uint64(3), client.Stats().Quarantined, "Stats counts the votes that did not count")
	assert.Zero(t, client.Stats().NodeErrors, "a quarantined node answered: no node error")

	require.NoError(t, client.TrustNodes(ctx))
	require.NoError(t, m.TryLock(ctx))
	require.NoError(t, m.Unlock(ctx))
}

// With the quarantine, a Mutex whose TTL exceeds MaxTTL is refused, and so
// is an extension beyond it.
func TestQuarantineRefusesATTLBeyondMaxTTL(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{MaxTTL: 2 * time.Second})
	ctx := context.Background()
	err := client.NewMutex("long", MutexOptions{TTL: 5 * time.Second}).Lock(ctx)
	require.ErrorIs(t, err, ErrInvalidOptions)
	assert.Contains(t, err.Error(), "MaxTTL")
	m := client.NewMutex("short", MutexOptions{TTL: time.Second})
	assert.ErrorIs(t, m.ExtendFor(ctx, 5*time.Second), ErrInvalidOptions)
}

// A node that writes every write to its append-only file and fsyncs it
// before it answers (appendfsync always) loses nothing it acknowledged
// when it restarts: the marker it kept, written when it ran so, is trusted
// at once, and its lock keys still exclude. With appendfsync everysec the
// last second of writes can be lost, and the restart is quarantined.
func TestQuarantineTrustsADurableRestartAtOnce(t *testing.T) {
	redistest.RequireReal(t)
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			nodes := startCluster(t, 3, redistest.Options{Persistence: redistest.PersistenceAOF, ExtraArgs: []string{"--appendfsync", fsync}})
			ctx := context.Background()
			options := Options{MaxTTL: 10 * time.Second, NodeTimeout: 2 * time.Second} // fsyncs under load outlast 50 ms
			a := nodes.client(t, options)
			require.NoError(t, a.TrustNodes(ctx))
			held := a.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second})
			require.NoError(t, held.Lock(ctx), "the check marks the markers of the nodes that fsync always")

			nodes.servers[1].Kill9()
			nodes.servers[1].Restart(t)

			b := nodes.client(t, options)
			require.ErrorIs(t, b.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second}).TryLock(ctx), ErrNotAcquired, "A holds the lock")
			// Node 1 may have lost the ledger's key with everysec: its grant
			// of it, quarantined, is not counted here.
			before := b.Stats().Quarantined
			fresh := b.NewMutex("fresh", MutexOptions{TTL: 10 * time.Second})
			require.NoError(t, fresh.TryLock(ctx))
			defer fresh.Unlock(ctx)
			quarantined := b.Stats().Quarantined - before
			if fsync == "always" {
				assert.Zero(t, quarantined, "the durable restart is trusted")
				return
			}
			assert.Equal(t, uint64(1), quarantined, "the restart that may have lost writes is quarantined")
		})
	}
}

// A node flushed while it stays up, which no client reconnects to, loses
// its marker with its keys: the clients that watch the marker read it
// again at once, and quarantine the node. They used to notice only at
// their next connection to it.
func TestQuarantineNoticesAFlushOfANodeThatStaysUp(t *testing.T) {
	nodes := trustedCluster(t)
	ctx := context.Background()
	client := nodes.client(t, Options{MaxTTL: 10 * time.Second})
	m := client.NewMutex("before", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.True(t, waitUntil(func() bool { return client.quarantine.Armed(1) > 0 }), "node 1's marker, read, is armed")

	nodes.servers[1].Do(t, "FLUSHALL")

	require.True(t, waitUntil(func() bool { return client.quarantine.Pending(1) }), "the flush was noticed")
	after := client.NewMutex("after", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, after.TryLock(ctx), "two nodes of three still vote")
	defer after.Unlock(ctx)
	assert.Equal(t, uint64(1), client.Stats().Quarantined, "node 1, flushed, is quarantined")
}
