package redlock_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
)

// closedAddress returns a loopback address where nothing listens.
func closedAddress(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	address := listener.Addr().String()
	require.NoError(t, listener.Close())
	return address
}

// inspectNodes starts n servers and returns them with their addresses.
func inspectNodes(t *testing.T, n int) ([]*redistest.Server, []string) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	addresses := make([]string, n)
	for i, server := range servers {
		addresses[i] = server.Addr()
	}
	return servers, addresses
}

func TestStatusOfAKnownState(t *testing.T) {
	servers, addresses := inspectNodes(t, 5)
	const first, second = "aaaaaaaa1111111111", "bbbbbbbb2222222222"
	for i, token := range []string{first, first, first, second} {
		require.Equal(t, "OK", servers[i].Do(t, "SET", "orders:1", token, "PX", "60000"))
	}
	require.Equal(t, "OK", servers[4].Do(t, "SET", "orders:1", "leaked"))

	status, err := doctorClient(t, addresses...).Status(context.Background(), "orders:1")
	require.NoError(t, err)
	assert.Equal(t, "orders:1", status.Key)
	assert.Equal(t, 3, status.Need)
	assert.Equal(t, 5, status.Answered)
	assert.Equal(t, "aaaaaaaa", status.Holder)
	assert.Equal(t, 3, status.Holders)
	assert.True(t, status.Locked())
	for i, node := range status.Nodes {
		assert.Equal(t, addresses[i], node.Address)
		assert.True(t, node.Held)
		assert.NoError(t, node.Err)
	}
	assert.Equal(t, "bbbbbbbb", status.Nodes[3].TokenPrefix)
	assert.InDelta(t, 60*time.Second, status.Nodes[0].TTL, float64(5*time.Second))
	assert.False(t, status.Nodes[0].Persistent)
	assert.True(t, status.Nodes[4].Persistent, "a key without a TTL")
	assert.Equal(t, "leaked", status.Nodes[4].TokenPrefix, "a short value is shown whole")
}

func TestStatusWithoutQuorum(t *testing.T) {
	servers, addresses := inspectNodes(t, 3)
	require.Equal(t, "OK", servers[0].Do(t, "SET", "k", "token-one", "PX", "60000"))
	require.Equal(t, "OK", servers[1].Do(t, "SET", "k", "token-two", "PX", "60000"))
	addresses = append(addresses, closedAddress(t), closedAddress(t))

	status, err := doctorClient(t, addresses...).Status(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, 3, status.Need)
	assert.Equal(t, 3, status.Answered)
	assert.Equal(t, 1, status.Holders)
	assert.False(t, status.Locked())
	assert.False(t, status.Nodes[2].Held)
	for _, node := range status.Nodes[3:] {
		require.Error(t, node.Err)
		assert.Contains(t, node.Err.Error(), node.Address, "the error names the node")
	}
}

func TestStatusFollowsAMutex(t *testing.T) {
	_, addresses := inspectNodes(t, 5)
	client := doctorClient(t, addresses...)
	ctx := context.Background()
	m := client.NewMutex("jobs:nightly", redlock.MutexOptions{TTL: 30 * time.Second, Fencing: true})
	require.NoError(t, m.Lock(ctx))

	status, err := client.Status(ctx, "jobs:nightly")
	require.NoError(t, err)
	assert.True(t, status.Locked())
	assert.GreaterOrEqual(t, status.Holders, status.Need, "%+v", status.Nodes)
	assert.Equal(t, m.Token()[:redlock.TokenPrefixLength], status.Holder)
	if fence := m.Fence(); fence != 0 {
		committed := 0
		for _, node := range status.Nodes {
			if node.Fence == fence {
				committed++
			}
		}
		assert.GreaterOrEqual(t, committed, status.Need, "a quorum has the fence committed")
	} else {
		t.Log("MutexOptions.Fencing is not available yet: the fence counters are not checked")
	}

	require.NoError(t, m.Unlock(ctx))
	status, err = client.Status(ctx, "jobs:nightly")
	require.NoError(t, err)
	assert.False(t, status.Locked())
	assert.Zero(t, status.Holders)
	assert.Empty(t, status.Holder)
}

func TestScanListsKeysAndLeaks(t *testing.T) {
	servers, addresses := inspectNodes(t, 3)
	many := 1200 // more than one SCAN batch
	if !servers[0].IsReal() {
		// miniredis ignores COUNT and answers with every key at once:
		// 1200 would exceed the reader's default aggregate limit.
		many = 500
	}
	for _, server := range servers[:2] {
		for i := range many {
			require.Equal(t, "OK", server.Do(t, "SET", fmt.Sprintf("locks:%d", i), "token", "PX", "60000"))
		}
		require.Equal(t, "OK", server.Do(t, "SET", "locks:leak", "token"))
		require.Equal(t, "OK", server.Do(t, "SET", "locks:x:lockmux-fence", "42"))
		require.Equal(t, "OK", server.Do(t, "SET", "other", "token", "PX", "60000"))
	}
	addresses = append(addresses, closedAddress(t))

	nodes, err := doctorClient(t, addresses...).Scan(context.Background(), "locks:*")
	require.NoError(t, err)
	require.Len(t, nodes, 4)
	for _, node := range nodes[:2] {
		require.NoError(t, node.Err)
		assert.Len(t, node.Keys, many+2)
		names := make([]string, 0, len(node.Keys))
		for _, key := range node.Keys {
			names = append(names, key.Key)
			if !key.Persistent {
				assert.Positive(t, key.TTL, key.Key)
			}
		}
		assert.NotContains(t, names, "other")
		assert.Equal(t, []redlock.KeyTTL{{Key: "locks:leak", Persistent: true}}, node.Leaks())
		fence := slices.IndexFunc(node.Keys, func(key redlock.KeyTTL) bool { return key.Key == "locks:x:lockmux-fence" })
		require.GreaterOrEqual(t, fence, 0)
		assert.True(t, node.Keys[fence].FenceCounter)
	}
	assert.NoError(t, nodes[2].Err)
	assert.Empty(t, nodes[2].Keys)
	require.Error(t, nodes[3].Err)
	assert.Contains(t, nodes[3].Err.Error(), addresses[3], "the error names the node")
}

func TestInspectClosedClient(t *testing.T) {
	_, addresses := inspectNodes(t, 1)
	client := doctorClient(t, addresses...)
	require.NoError(t, client.Close())
	_, err := client.Status(context.Background(), "k")
	assert.ErrorIs(t, err, redlock.ErrClosed)
	_, err = client.Scan(context.Background(), "")
	assert.ErrorIs(t, err, redlock.ErrClosed)
}
