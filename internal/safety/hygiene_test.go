//go:build linux

package safety_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/safety"
)

func TestLockKeysFindsLeftovers(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	keys, err := safety.LockKeys(context.Background(), server.Addr(), "lock:*", fenceCounterSuffix)
	require.NoError(t, err)
	assert.Empty(t, keys)
	server.Do(t, "SET", "lock:ghost", "token", "PX", "60000")
	server.Do(t, "SET", "lock:ghost"+fenceCounterSuffix, "12")
	server.Do(t, "SET", "other", "x")
	keys, err = safety.LockKeys(context.Background(), server.Addr(), "lock:*", fenceCounterSuffix)
	require.NoError(t, err)
	assert.Equal(t, []string{"lock:ghost"}, keys, "a leftover lock is found; fencing counters and other keys are not")
	_, err = safety.LockKeys(context.Background(), "127.0.0.1:1", "lock:*")
	assert.Error(t, err)
}
