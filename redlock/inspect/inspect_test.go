package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/inspect"
)

// newInspector returns an Inspector over addresses, closed when the test
// ends.
func newInspector(t *testing.T, addresses ...string) *inspect.Inspector {
	t.Helper()
	inspector, err := inspect.New(addresses, redlock.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { inspector.Close() })
	return inspector
}

// newClient returns a Client over addresses, closed when the test ends.
func newClient(t *testing.T, addresses ...string) *redlock.Client {
	t.Helper()
	client, err := redlock.New(addresses, redlock.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}

// inspectNodes starts n servers, stated new, and returns them with their
// addresses.
func inspectNodes(t *testing.T, n int) ([]*redistest.Server, []string) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	addresses := make([]string, n)
	for i, server := range servers {
		addresses[i] = server.Addr()
	}
	require.NoError(t, trustednodes.Trust(context.Background(), addresses, redlock.Options{}))
	return servers, addresses
}

func TestStatusOfAKnownState(t *testing.T) {
	servers, addresses := inspectNodes(t, 5)
	const first, second = "aaaaaaaa1111111111", "bbbbbbbb2222222222"
	for i, token := range []string{first, first, first, second} {
		require.Equal(t, "OK", servers[i].Do(t, "SET", "orders:1", token, "PX", "60000"))
	}
	require.Equal(t, "OK", servers[4].Do(t, "SET", "orders:1", "leaked"))

	status, err := newInspector(t, addresses...).Status(context.Background(), "orders:1")
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
	addresses = append(addresses, redistest.ClosedAddress(t), redistest.ClosedAddress(t))

	status, err := newInspector(t, addresses...).Status(context.Background(), "k")
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
	client, inspector := newClient(t, addresses...), newInspector(t, addresses...)
	ctx := context.Background()
	m := client.NewMutex("jobs:nightly", redlock.MutexOptions{TTL: 10 * time.Second, Fencing: true})
	require.NoError(t, m.Lock(ctx))

	status, err := inspector.Status(ctx, "jobs:nightly")
	require.NoError(t, err)
	assert.True(t, status.Locked())
	assert.GreaterOrEqual(t, status.Holders, status.Need, "%+v", status.Nodes)
	assert.Equal(t, m.Token()[:inspect.TokenPrefixLength], status.Holder)
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
	status, err = inspector.Status(ctx, "jobs:nightly")
	require.NoError(t, err)
	assert.False(t, status.Locked())
	// Unlock returns once a quorum confirmed: the release of the other
	// nodes may still be on its way.
	assert.Less(t, status.Holders, status.Need)
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
	addresses = append(addresses, redistest.ClosedAddress(t))

	nodes, err := newInspector(t, addresses...).Scan(context.Background(), "locks:*")
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
		assert.Equal(t, []inspect.KeyTTL{{Key: "locks:leak", Persistent: true}}, node.Leaks())
		fence := slices.IndexFunc(node.Keys, func(key inspect.KeyTTL) bool { return key.Key == "locks:x:lockmux-fence" })
		require.GreaterOrEqual(t, fence, 0)
		assert.True(t, node.Keys[fence].FenceCounter)
	}
	assert.NoError(t, nodes[2].Err)
	assert.Empty(t, nodes[2].Keys)
	require.Error(t, nodes[3].Err)
	assert.Contains(t, nodes[3].Err.Error(), addresses[3], "the error names the node")
}

func TestInspectorClosed(t *testing.T) {
	_, addresses := inspectNodes(t, 1)
	inspector := newInspector(t, addresses...)
	require.NoError(t, inspector.Close())
	_, err := inspector.Status(context.Background(), "k")
	assert.ErrorIs(t, err, inspect.ErrClosed)
	_, err = inspector.Scan(context.Background(), "")
	assert.ErrorIs(t, err, inspect.ErrClosed)
	assert.NoError(t, inspector.Close(), "a second Close does nothing")
}

func TestNewRefusesWhatCannotBeInspected(t *testing.T) {
	tests := []struct {
		name      string
		addresses []string
		options   redlock.Options
		want      error
	}{
		{name: "no addresses", want: redlock.ErrInvalidOptions},
		{name: "an address that does not parse", addresses: []string{"redis://[::1"}, want: redlock.ErrInvalidOptions},
		{name: "invalid options", addresses: []string{"127.0.0.1:6379"}, options: redlock.Options{Protocol: 7}, want: redlock.ErrInvalidOptions},
		{name: "an address given twice", addresses: []string{"127.0.0.1:6379", "redis://127.0.0.1:6379"}, want: redlock.ErrDuplicateNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := inspect.New(tt.addresses, tt.options)
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

// A cancellation ends Status and Scan at once, with an error that matches
// context.Canceled, even when the nodes would make the caller wait for the
// 5 s timeout of their commands.
func TestCancellationEndsStatusAndScanPromptly(t *testing.T) {
	redistest.RequireReal(t)
	servers, addresses := inspectNodes(t, 3)
	inspector := newInspector(t, addresses...)
	ctx := context.Background()
	_, err := inspector.Status(ctx, "cancelled") // every connection is up
	require.NoError(t, err)
	for _, server := range servers {
		server.Stop()
	}
	defer func() {
		for _, server := range servers {
			server.Cont()
		}
	}()

	operations := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{name: "Status", run: func(ctx context.Context) error { _, err := inspector.Status(ctx, "cancelled"); return err }},
		{name: "Scan", run: func(ctx context.Context) error {
			nodes, err := inspector.Scan(ctx, "*")
			if err == nil {
				for _, node := range nodes {
					err = errors.Join(err, node.Err)
				}
			}
			return err
		}},
	}
	for _, operation := range operations {
		t.Run(operation.name, func(t *testing.T) {
			cancelled, cancel := context.WithCancel(ctx)
			timer := time.AfterFunc(20*time.Millisecond, cancel)
			defer timer.Stop()
			started := time.Now()
			err := operation.run(cancelled)
			elapsed := time.Since(started)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Less(t, elapsed, time.Second, "a cancelled call must not wait for the nodes")
		})
	}
}

// A scan of a Redis Cluster member walks every master's keyspace: each key
// is found once, whichever master its slot is on.
func TestScanWalksEveryMasterOfACluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	want := make([]string, 0, 90)
	for i := range 90 {
		key := fmt.Sprintf("locks:%d", i)
		require.Equal(t, "OK", cluster.MasterOf(mux.Slot(key)).Do(t, "SET", key, "token", "PX", "60000"))
		want = append(want, key)
	}
	nodes, err := newInspector(t, cluster.Address()).Scan(context.Background(), "locks:*")
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.NoError(t, nodes[0].Err)
	found := make([]string, 0, len(nodes[0].Keys))
	for _, key := range nodes[0].Keys {
		found = append(found, key.Key)
		assert.Positive(t, key.TTL, key.Key)
	}
	assert.ElementsMatch(t, want, found)
}
