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

// turnObserver calls then from inside the first winning attempt after
// armed, as its OnAcquire runs.
type turnObserver struct {
	NopObserver
	mu    sync.Mutex
	armed bool
	m     *Mutex
	then  func()
}

func (o *turnObserver) OnAcquire(event AcquireEvent) {
	o.mu.Lock()
	fire := o.armed && event.Err == nil
	if fire {
		o.armed = false
	}
	o.mu.Unlock()
	if fire {
		o.then()
	}
}

// A Lock that waited, whose hold is unlocked while its observers still
// run, returns before the next Lock of the Mutex gets the turn: the next
// one's attempts never meet the first one's ending, which gives back the
// wait state it borrowed. Here the next Lock's first attempt fails (the
// key was taken from outside) and it borrows a wait state of its own,
// which must be the one it keeps until it wins.
func TestUnlockDuringLockPassesTheTurnOnceLockReturned(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(map[bool]string{false: "mutex", true: "fair"}[fair], func(t *testing.T) { unlockDuringLock(t, fair) })
	}
}

// unlockDuringLock is TestUnlockDuringLockPassesTheTurnOnceLockReturned
// for a Mutex, or a fair one: the wait state of a fair Lock names its
// place in line.
func unlockDuringLock(t *testing.T, fair bool) {
	nodes := startCluster(t, 1, redistest.Options{})
	observer := &turnObserver{}
	client := nodes.client(t, Options{Observer: observer})
	other := nodes.client(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder := other.NewMutex("k", MutexOptions{TTL: 10 * time.Second, Fair: fair})
	require.NoError(t, holder.Lock(ctx))
	m := client.NewMutex("k", MutexOptions{TTL: 10 * time.Second, Fair: fair})
	observer.m = m

	next := make(chan error, 1)
	var lentBefore bool
	observer.then = func() {
		// The key goes to another client, so that the next Lock's first
		// attempt fails and it waits.
		client.do(t, 0, "SET", "k", "taken from outside", "PX", "10000")
		m.Unlock(ctx)
		mine := m.wait.Load()
		go func() { next <- m.Lock(ctx) }()
		require.True(t, waitUntil(func() bool {
			lent := m.wait.Load()
			return lent != nil && lent != mine || blockedIn("(*Turn).Take")
		}), "the next Lock neither waited for its turn nor borrowed a wait state")
		lent := m.wait.Load()
		lentBefore = lent != nil && lent != mine
	}
	observer.mu.Lock()
	observer.armed = true
	observer.mu.Unlock()
	go func() { holder.Unlock(ctx) }()
	require.NoError(t, m.Lock(ctx), "the Lock whose hold was unlocked while it returned")
	require.False(t, lentBefore, "the next Lock ran while the first one had not returned")

	require.True(t, waitUntil(func() bool { return m.wait.Load() != nil }), "the next Lock waits with a wait state")
	client.do(t, 0, "DEL", "k")
	require.NoError(t, <-next, "the next Lock")
	assert.Nil(t, m.wait.Load(), "the next Lock gave its wait state back")
	require.NoError(t, m.Unlock(ctx))
}
