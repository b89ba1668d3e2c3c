package redlock

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// A panic in Client.Do's function releases the lock, and goes on with its
// own value to whoever recovers it above Do: the hold is not left to be
// renewed until MaxHold.
func TestDoReleasesTheLockWhenItsFunctionPanics(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	value := errors.New("the function panics")
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		_ = client.Do(context.Background(), "k", MutexOptions{TTL: time.Second}, func(context.Context) error {
			panic(value)
		})
	}()
	assert.True(t, recovered == value, "the panic goes on with its own value, got %v", recovered)
	assert.Equal(t, repeat("", 3), client.values(t, "k"), "the lock was released")
	other := nodes.client(t, Options{}).NewMutex("k", MutexOptions{})
	require.NoError(t, other.TryLock(context.Background()), "another client takes the lock at once")
	require.NoError(t, other.Unlock(context.Background()))
}

// A function of Client.Do that ends its goroutine (runtime.Goexit, as
// t.FailNow does) releases the lock too.
func TestDoReleasesTheLockWhenItsFunctionExitsTheGoroutine(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_ = client.Do(context.Background(), "k", MutexOptions{TTL: time.Second}, func(context.Context) error {
			runtime.Goexit()
			return nil
		})
	}()
	<-exited
	assert.Equal(t, repeat("", 3), client.values(t, "k"), "the lock was released")
}

// After Client.Close, the context of Client.Do is cancelled with a cause
// that matches both ErrLockLost and ErrClosed, as the docs promise.
func TestDoContextCauseAfterCloseMatchesLockLostAndClosed(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	var cause error
	err := client.Do(context.Background(), "k", MutexOptions{TTL: time.Second}, func(ctx context.Context) error {
		require.NoError(t, client.Close())
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(5 * time.Second):
			cause = errors.New("the context was not cancelled 5 s after Close")
		}
		return nil
	})
	assert.ErrorIs(t, err, ErrClosed, "the unlock after Close")
	assert.ErrorIs(t, cause, ErrLockLost)
	assert.ErrorIs(t, cause, ErrClosed)
}

// failureObserver counts the failed acquisition attempts of each key.
type failureObserver struct {
	NopObserver
	mu       sync.Mutex
	failures map[string]int
}

func (o *failureObserver) OnAcquire(event AcquireEvent) {
	if event.Err == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failures == nil {
		o.failures = make(map[string]int)
	}
	o.failures[event.Key]++
}

func (o *failureObserver) failed(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failures[key]
}

// waitUntil waits, for at most five seconds, until condition holds, and
// reports whether it did.
func waitUntil(condition func() bool) bool { return waitUntilWithin(5*time.Second, condition) }

// waitUntilWithin waits, for at most timeout, until condition holds, and
// reports whether it did.
func waitUntilWithin(timeout time.Duration, condition func() bool) bool {
	for deadline := time.Now().Add(timeout); !condition(); runtime.Gosched() {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// blockedIn reports whether some goroutine's stack is in function.
func blockedIn(function string) bool {
	stacks := make([]byte, 1<<20)
	return strings.Contains(string(stacks[:runtime.Stack(stacks, true)]), function)
}

// Client.Close wakes every goroutine blocked in Lock at once, whatever it
// waits for: the retry delay after a split vote, a release notification,
// or its turn behind another goroutine of the same Mutex. Each returns an
// error matching ErrClosed well before the 3 s retry delay.
func TestCloseWakesEveryBlockedLock(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("held", MutexOptions{})
	require.NoError(t, holder.Lock(context.Background()))
	defer holder.Unlock(context.Background())
	observer := &failureObserver{}
	const retryDelay = 3 * time.Second
	client := nodes.client(t, Options{Observer: observer, RetryDelayMin: retryDelay, RetryDelayMax: retryDelay})
	for i := range 2 {
		client.do(t, i, "SET", "split", "someone else") // an attempt wins one node of three
	}
	split := client.NewMutex("split", MutexOptions{})
	held := client.NewMutex("held", MutexOptions{})
	turn := client.NewMutex("turn", MutexOptions{})
	require.NoError(t, turn.Lock(context.Background()))

	type result struct {
		name string
		err  error
		at   time.Time
	}
	waiters := map[string]*Mutex{"sleeping after a split vote": split, "waiting for a notification": held, "waiting for its turn": turn}
	results := make(chan result, len(waiters))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, m := range waiters {
		go func() {
			err := m.Lock(ctx)
			results <- result{name: name, err: err, at: time.Now()}
		}()
	}
	require.True(t, waitUntil(func() bool { return observer.failed("split") >= 1 }), "the split vote")
	// Each node's confirmation of the subscription wakes the waiter once:
	// it is in its long wait once every node subscribed, it failed again
	// and no wake-up is pending.
	require.True(t, waitUntil(func() bool {
		for i := range nodes.servers {
			if client.do(t, i, "PUBSUB", "NUMSUB", "lockmux:released:held").Elems[1].Int != 1 {
				return false
			}
		}
		return observer.failed("held") >= 2 && held.waiter().Listening() && !held.waiter().WakeUpPending()
	}), "listening for the release after the subscriptions were confirmed")
	require.True(t, waitUntil(func() bool { return blockedIn("(*Mutex).takeTurn") }), "waiting for the turn")

	closed := time.Now()
	require.NoError(t, client.Close())
	timeout := time.After(5 * time.Second)
	for len(waiters) > 0 {
		select {
		case r := <-results:
			delete(waiters, r.name)
			assert.ErrorIs(t, r.err, ErrClosed, r.name)
			assert.Less(t, r.at.Sub(closed), time.Second, "%s: woken well before the retry delay", r.name)
		case <-timeout:
			for name := range waiters {
				t.Errorf("%s: still blocked in Lock 5 s after Close", name)
			}
			turn.Unlock(context.Background()) // gives the turn away
			cancel()
			for range waiters {
				<-results
			}
			return
		}
	}
}
