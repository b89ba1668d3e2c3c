package redlock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// These tests count on the order in which mux.Group.Wait gathers the
// replies of a round whose nodes are all connected: the Group's order, up
// to the quorum. A node after the quorum is not awaited: its outcome is
// unknown to the hold.

// Issue 13, item 15: a repair goes only to nodes that had the hold. Node 1
// refused the acquisition (another client held the key there); when that
// key is gone, node 1 answers the next extension "missing", and the hold,
// which never had node 1, must not take it now.
func TestRepairSkipsNodesTheHoldNeverHad(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	client.do(t, 0, "SET", "k", "other", "PX", "60000")
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	client.do(t, 0, "DEL", "k") // the other client's key expired

	require.NoError(t, m.Extend(context.Background()))
	assert.Equal(t, []string{"", m.Token(), m.Token()}, client.values(t, "k"), "node 1 never had the hold")
	require.NoError(t, m.Unlock(context.Background()))
}

// Issue 13, item 15: a node of a multi-key hold that lost some of its keys
// (it still has a, lost b) gets all of them back. The repair used to be the
// all-or-nothing acquisition, which refuses a node where a key exists.
func TestRepairRestoresEveryKeyOfAMultiKeyNode(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	m := client.NewMutex("a", MutexOptions{Keys: []string{"b", "c"}})
	require.NoError(t, m.Lock(context.Background()))
	client.do(t, 0, "DEL", "b")
	client.do(t, 0, "PEXPIRE", "a", "5000")

	require.NoError(t, m.Extend(context.Background()))
	for _, key := range []string{"a", "b", "c"} {
		assert.Equal(t, repeat(m.Token(), 3), client.values(t, key), "key %s", key)
	}
	ttl := client.do(t, 0, "PTTL", "a").Int
	assert.Greater(t, ttl, int64(5000), "the keys the node kept get the extension's TTL too")

	// A node where a key holds another token is not touched.
	client.do(t, 0, "SET", "b", "other", "PX", "60000")
	client.do(t, 0, "DEL", "c")
	require.NoError(t, m.Extend(context.Background()))
	assert.Equal(t, []string{m.Token(), "other", ""}, []string{client.values(t, "a")[0], client.values(t, "b")[0], client.values(t, "c")[0]})
	require.NoError(t, m.Unlock(context.Background()))
}

// Issue 13, item 15: the nodes a hold had are those that confirmed its
// acquisition and those that confirmed an extension since. With five nodes,
// the acquisition counts nodes 1–3; node 4 joins when the first extension
// counts it (node 1 lost the key), and is repaired when it loses the key in
// turn.
func TestRepairReachesNodesAnExtensionConfirmed(t *testing.T) {
	nodes := startCluster(t, 5, redistest.Options{})
	client := nodes.client(t, Options{})
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	token := m.Token()
	require.Equal(t, repeat(token, 5), client.values(t, "k"))

	client.do(t, 0, "DEL", "k")
	require.NoError(t, m.Extend(context.Background())) // counts nodes 1 (missing), 2, 3 and 4
	require.Equal(t, repeat(token, 5), client.values(t, "k"), "node 1 had the hold: repaired")

	client.do(t, 1, "SET", "k", "other", "PX", "60000") // node 2 refuses: node 4 and 5 are counted
	client.do(t, 3, "DEL", "k")
	require.NoError(t, m.Extend(context.Background()))
	assert.Equal(t, []string{token, "other", token, token, token}, client.values(t, "k"), "node 4 confirmed an extension: repaired")
	require.NoError(t, m.Unlock(context.Background()))
}
