package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
)

// The restart hazard with options left as they are: A holds the lock on
// nodes 0 and 1 (node 2 did not answer), node 1 restarts without its
// data, and B, made with Options{}, asks nodes 1 and 2.
func TestDefaultOptionsKeepARestartedNodeOutOfTheLocks(t *testing.T) {
	nodes := trustedCluster(t)
	ctx := context.Background()
	var proxied []string
	for i, server := range nodes.servers {
		proxy := faultnet.New(t, server.Addr())
		if i == 2 {
			proxy.Partition()
		}
		proxied = append(proxied, proxy.Addr())
	}
	a, err := New(proxied, Options{})
	require.NoError(t, err)
	defer a.Close()
	held := a.NewMutex("ledger", MutexOptions{TTL: 6 * time.Second})
	require.NoError(t, held.Lock(ctx), "A holds nodes 0 and 1")

	nodes.servers[1].Kill9()
	nodes.servers[1].Wipe()
	nodes.servers[1].Restart(t)

	b := nodes.client(t, Options{})
	err = b.NewMutex("ledger", MutexOptions{TTL: 6 * time.Second}).TryLock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired, "B would hold the lock A holds")
	assert.True(t, quarantined(err), "node 1 is quarantined: %v", err)
}

// A connection lost and dialled again to the same server process keeps
// the node's verdict: the server did not restart (its run_id is the one
// the verdict was read from), and each vote is still judged by the marker
// read after it.
func TestQuarantineKeepsAVerdictAcrossAReconnectionToTheSameServer(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 1, redistest.Options{})
	client := nodes.client(t, Options{})
	ctx := context.Background()
	m := client.NewMutex("reconnected", MutexOptions{})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	for range 3 {
		nodes.servers[0].Do(t, "CLIENT", "KILL", "TYPE", "normal") // every connection but the one asking
		var err error
		for range 3 { // the first attempt may find the connection closed
			if err = m.TryLock(ctx); err == nil || quarantined(err) {
				break
			}
		}
		require.NoError(t, err, "the same server process, on a new connection, votes")
		require.NoError(t, m.Unlock(ctx))
	}
}
