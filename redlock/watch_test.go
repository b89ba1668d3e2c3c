package redlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// extendObserver passes on each automatic extension.
type extendObserver struct {
	NopObserver
	mu         sync.Mutex
	extensions chan ExtendEvent
	count      int
}

func (o *extendObserver) OnExtend(event ExtendEvent) {
	o.mu.Lock()
	o.count++
	o.mu.Unlock()
	if event.Automatic {
		select {
		case o.extensions <- event:
		default:
		}
	}
}

// Item 7 of issue 13: a renewed hold's key cut short from outside on a
// quorum of nodes is noticed at once, not at the next renewal (here 3.3 s
// away): the hold extends its keys again, and another client cannot take
// the lock while the first one's Done is open.
func TestRenewedHoldNoticesItsKeysCutShort(t *testing.T) {
	redistest.RequireReal(t) // key tracking needs redis-server
	nodes := startCluster(t, 3, redistest.Options{})
	observer := &extendObserver{extensions: make(chan ExtendEvent, 4)}
	client := nodes.client(t, Options{Observer: observer})
	ctx := context.Background()
	m := client.NewMutex("watched", MutexOptions{TTL: 10 * time.Second, AutoExtend: true})
	require.NoError(t, m.Lock(ctx))
	defer m.Unlock(ctx)

	for i := range 2 {
		client.do(t, i, "PEXPIRE", "watched", "100")
	}
	select {
	case event := <-observer.extensions:
		require.NoError(t, event.Err, "the extension that answers the cut")
	case <-time.After(2 * time.Second):
		t.Fatal("the cut went unnoticed: no extension before the renewal's schedule")
	}
	for i := range nodes.servers {
		assert.Greater(t, client.do(t, i, "PTTL", "watched").Int, int64(5000), "node %d has the key for a whole TTL again", i)
	}
	select {
	case <-m.Done():
		t.Fatal("the hold was restored, not lost")
	default:
	}
	other := nodes.client(t, Options{})
	assert.ErrorIs(t, other.NewMutex("watched", MutexOptions{}).TryLock(ctx), ErrNotAcquired)
}

// The hold's own extensions change its keys too, and must not make it
// extend again and again: with a renewal every 200 ms, a second sees about
// five extensions.
func TestWatchedHoldIgnoresItsOwnExtensions(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	observer := &extendObserver{extensions: make(chan ExtendEvent, 1)}
	client := nodes.client(t, Options{Observer: observer})
	ctx := context.Background()
	m := client.NewMutex("watched", MutexOptions{TTL: 600 * time.Millisecond, AutoExtend: true})
	require.NoError(t, m.Lock(ctx))
	timer := time.NewTimer(time.Second)
	select {
	case <-timer.C:
	case <-m.Done():
		t.Fatal("the hold was lost")
	}
	require.NoError(t, m.Unlock(ctx))
	observer.mu.Lock()
	defer observer.mu.Unlock()
	assert.GreaterOrEqual(t, observer.count, 3, "the hold was renewed")
	assert.LessOrEqual(t, observer.count, 10, "own extensions do not count as changes from outside")
}
