package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// A lock over several keys: a node votes for it only if it set every key,
// and keeps none of them otherwise.
func TestMultiKeyLockIsAllOrNothingPerNode(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	client.do(t, 2, "SET", "b", "other", "PX", "60000") // node 3 cannot give b
	m := client.NewMutex("a", MutexOptions{Keys: []string{"b", "c"}})

	require.NoError(t, m.Lock(context.Background()))
	token := m.Token()
	for _, key := range []string{"a", "b", "c"} {
		values := client.values(t, key)
		assert.Equal(t, token, values[0], "key %s on node 1", key)
		assert.Equal(t, token, values[1], "key %s on node 2", key)
	}
	assert.Equal(t, []string{"", "other", ""}, []string{client.values(t, "a")[2], client.values(t, "b")[2], client.values(t, "c")[2]},
		"node 3 kept none of the keys it set")

	require.NoError(t, m.Extend(context.Background()))
	require.NoError(t, m.Unlock(context.Background()))
	for _, key := range []string{"a", "c"} {
		assert.Equal(t, repeat("", 3), client.values(t, key))
	}
	assert.Equal(t, []string{"", "", "other"}, client.values(t, "b"), "another holder's key is untouched")
}

// A hold can be resumed by its token, in another client, with the
// validity the nodes have left.
func TestResumeByToken(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	first := nodes.client(t, Options{}).NewMutex("job", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, first.Lock(context.Background()))

	second := nodes.client(t, Options{}).NewMutex("job", MutexOptions{TTL: 10 * time.Second, Token: first.Token()})
	require.NoError(t, second.TryLock(context.Background()))
	assert.Equal(t, first.Token(), second.Token())
	assert.False(t, second.Until().After(first.Until().Add(time.Second)), "the validity left, not a new TTL")
	assert.True(t, second.Until().After(time.Now()))
	require.NoError(t, second.Unlock(context.Background()))
	assert.ErrorIs(t, first.Unlock(context.Background()), ErrLockLost, "the first holder handed it over")
}

// A token whose hold has expired takes the lock anew, with the same token.
func TestResumeAfterExpiryAcquires(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	m := client.NewMutex("job", MutexOptions{Token: "handed-over-token"})
	require.NoError(t, m.Lock(context.Background()))
	assert.Equal(t, repeat("handed-over-token", 3), client.values(t, "job"))
	require.NoError(t, m.Unlock(context.Background()))

	other := client.NewMutex("job", MutexOptions{})
	require.NoError(t, other.Lock(context.Background()))
	assert.ErrorIs(t, m.TryLock(context.Background()), ErrNotAcquired, "a token does not take a lock held by another")
	require.NoError(t, other.Unlock(context.Background()))
}

// An extension sets the key again on a minority node that lost it (a node
// restarted empty), but never revives a hold a quorum lost (redsync #186,
// PR #149).
func TestExtensionRepairsAMinorityNode(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	client.do(t, 0, "DEL", "k")
	require.NoError(t, m.Extend(context.Background()))
	assert.Equal(t, repeat(m.Token(), 3), client.values(t, "k"), "node 1 holds the key again")

	client.do(t, 0, "DEL", "k")
	client.do(t, 1, "DEL", "k")
	require.ErrorIs(t, m.Extend(context.Background()), ErrLockLost, "a quorum lost the key: no repair")
}
