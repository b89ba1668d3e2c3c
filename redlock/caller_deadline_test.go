package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
)

// A goroutine whose calls have very short contexts stops waiting when its
// context ends; the connections it shares with another goroutine go on,
// and that goroutine's extensions all succeed. The nodes answer in 2 ms,
// well after the short contexts end; the node timeout is long, so that a
// loaded machine's stalls are not taken for the neighbours' cost.
func TestImpatientNeighbourCostsOthersNothing(t *testing.T) {
	redistest.RequireReal(t)
	var addresses []string
	servers := redistest.StartN(t, 3, redistest.Options{})
	trustServers(t, servers...)
	for _, server := range servers {
		proxy := faultnet.New(t, server.Addr())
		proxy.Delay(0, 2*time.Millisecond)
		addresses = append(addresses, proxy.Addr())
	}
	client, err := New(addresses, Options{NodeTimeout: 2 * time.Second})
	require.NoError(t, err)
	defer client.Close()
	ctx := context.Background()
	held := client.NewMutex("patient", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, held.Lock(ctx))
	defer held.Unlock(ctx)

	stop := make(chan struct{})
	var impatient, cut atomic.Int64
	var neighbours sync.WaitGroup
	for i := range 4 {
		neighbours.Go(func() { impatientNeighbour(ctx, client, fmt.Sprint("impatient:", i), stop, &impatient, &cut) })
	}
	failures := 0
	var first error
	for range 200 {
		if err := held.Extend(ctx); err != nil {
			failures++
			if first == nil {
				first = err
			}
		}
	}
	close(stop)
	neighbours.Wait()
	assert.Zero(t, failures, "extensions failed beside impatient neighbours; the first: %v", first)
	assert.Positive(t, cut.Load(), "of the neighbours' %d attempts, none returned its context's error", impatient.Load())
}

// impatientNeighbour makes lock attempts with contexts of up to 500 µs,
// some of which end before the round starts, some in the middle of it,
// some after, until stop is closed. It counts its attempts, and those that
// returned their context's error.
func impatientNeighbour(ctx context.Context, client *Client, key string, stop chan struct{}, attempts, cut *atomic.Int64) {
	m := client.NewMutex(key, MutexOptions{TTL: time.Second})
	for {
		select {
		case <-stop:
			return
		default:
		}
		short, cancel := context.WithTimeout(ctx, time.Duration(rand.N(500))*time.Microsecond)
		err := m.TryLock(short)
		cancel()
		attempts.Add(1)
		switch {
		case err == nil:
			m.Unlock(ctx)
		case errors.Is(err, context.DeadlineExceeded):
			cut.Add(1)
		}
	}
}

// A cancellation ends every wait at once, with an error that matches
// context.Canceled, even when the nodes would make the caller wait a long
// node timeout.
func TestCancellationEndsEveryWaitPromptly(t *testing.T) {
	redistest.RequireReal(t)
	cluster := startCluster(t, 3, redistest.Options{})
	client := cluster.client(t, Options{NodeTimeout: 3 * time.Second})
	ctx := context.Background()
	m := client.NewMutex("cancelled", MutexOptions{})
	require.NoError(t, m.Lock(ctx)) // every connection is up
	require.NoError(t, m.Unlock(ctx))
	for _, server := range cluster.servers {
		server.Stop()
	}
	defer func() {
		for _, server := range cluster.servers {
			server.Cont()
		}
	}()

	operations := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{name: "TryLock", run: m.TryLock},
		{name: "Lock", run: m.Lock},
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
			assert.Less(t, elapsed, time.Second, "a cancelled call must not wait for the 3 s node timeout")
		})
	}
}

// New does not dial, so it never blocks, even on nodes that accept
// connections and answer nothing; the first lock then waits only for its
// context.
func TestNewDoesNotWaitForTheNodes(t *testing.T) {
	redistest.RequireReal(t)
	cluster := startCluster(t, 3, redistest.Options{})
	for _, server := range cluster.servers {
		server.Stop()
		defer server.Cont()
	}
	started := time.Now()
	client, err := New(cluster.addresses, Options{DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer client.Close()
	assert.Less(t, time.Since(started), time.Second, "New must not wait for the 5 s dial timeout")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	started = time.Now()
	err = client.NewMutex("k", MutexOptions{}).Lock(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(started), time.Second, "Lock must not wait for the 5 s dial timeout")
}
