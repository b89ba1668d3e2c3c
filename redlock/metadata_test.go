package redlock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// Metadata is kept on the nodes with the token, as the keys' value
// "TOKEN METADATA", for the whole hold: extensions and the release compare
// the whole value, and a resumption needs the metadata with the token.
func TestMetadataIsStoredWithTheHold(t *testing.T) {
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{})
	ctx := context.Background()
	const metadata = "host-7 pid 4242 nightly export"
	m := client.NewMutex("reports", MutexOptions{TTL: 10 * time.Second, Metadata: metadata})
	require.NoError(t, m.Lock(ctx))
	token := m.Token()
	assert.NotContains(t, token, " ", "Token is the token alone")
	assert.Len(t, token, tokenLength)
	assert.Equal(t, metadata, m.Metadata())
	for i, value := range client.values(t, "reports") {
		assert.Equal(t, token+" "+metadata, value, "node %d", i)
	}
	require.NoError(t, m.Extend(ctx))

	other := nodesClient(t, client)
	without := other.NewMutex("reports", MutexOptions{TTL: 10 * time.Second, Token: token, MaxTries: 1})
	require.ErrorIs(t, without.Lock(ctx), ErrNotAcquired, "the token alone is not the keys' value")
	resumed := other.NewMutex("reports", MutexOptions{TTL: 10 * time.Second, Token: token, Metadata: metadata})
	require.NoError(t, resumed.TryLock(ctx), "the token and the metadata resume the hold")
	assert.Equal(t, metadata, resumed.Metadata())
	require.NoError(t, resumed.Unlock(ctx))
	assert.ErrorIs(t, m.Unlock(ctx), ErrLockLost, "released by the resumer")
	assert.Empty(t, m.Metadata(), "not held")
}

// nodesClient returns another Client over the nodes of client.
func nodesClient(t *testing.T, client *Client) *Client {
	t.Helper()
	other, err := New(client.dialAddresses, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	return other
}

// Metadata must be printable ASCII, spaces included, and at most 256
// bytes.
func TestMetadataIsChecked(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	ctx := context.Background()
	for _, metadata := range []string{"line\nbreak", "tab\there", strings.Repeat("x", maxMetadataLength+1), "naïve"} {
		err := client.NewMutex("checked", MutexOptions{Metadata: metadata}).Lock(ctx)
		require.ErrorIs(t, err, ErrInvalidOptions, "%q", metadata)
		assert.Contains(t, err.Error(), "MutexOptions.Metadata")
	}
	m := client.NewMutex("checked", MutexOptions{Metadata: strings.Repeat("~ ", maxMetadataLength/2)})
	require.NoError(t, m.Lock(ctx), "the longest metadata")
	require.NoError(t, m.Unlock(ctx))
}
