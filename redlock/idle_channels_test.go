package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// Against real nodes: the subscription of a key nobody waits for any more
// stays on the nodes until more channels than the limit are idle.
func TestIdleSubscriptionsAreBounded(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 1, redistest.Options{})
	holders := nodes.client(t, Options{})
	waiters := nodes.client(t, Options{})
	waiters.notifier.IdleLimit = 1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, key := range []string{"a", "b"} {
		holder := holders.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
		require.NoError(t, holder.Lock(ctx))
		waiter := waiters.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
		locked := make(chan error, 1)
		go func() { locked <- waiter.Lock(ctx) }()
		awaitSubscribers(t, nodes.servers[0], releasedChannelPrefix+key, 1)
		require.NoError(t, holder.Unlock(ctx))
		require.NoError(t, <-locked)
		require.NoError(t, waiter.Unlock(ctx))
	}
	awaitSubscribers(t, nodes.servers[0], releasedChannelPrefix+"a", 0)
	awaitSubscribers(t, nodes.servers[0], releasedChannelPrefix+"b", 1)
}
