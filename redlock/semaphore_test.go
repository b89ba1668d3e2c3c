package redlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock/internal/round"
)

// countingAcquireScript is the permit of a semaphore that counts holders
// per node, as the multi-master semaphores that count do: a node grants
// while fewer than the limit hold it. KEYS[1] the semaphore, ARGV[1] the
// holder, ARGV[2] the limit.
const countingAcquireScript = `
if redis.call("SCARD", KEYS[1]) < tonumber(ARGV[2]) then
  redis.call("SADD", KEYS[1], ARGV[1])
  return 1
end
return 0`

// The interleaving that breaks a semaphore that counts holders per node:
// three nodes, a limit of 2, three clients that each reach a different two
// of the nodes. Counting, each client finds fewer than 2 holders on the
// two nodes it reaches, a majority, and all three hold. The Semaphore's
// slots admit two: the third client finds each slot held on one of its
// two nodes.
func TestSemaphoreAdmitsNoMoreThanItsLimitWhereCountingWould(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	const limit = 2
	// reach[i] are the nodes client i reaches; the third is cut off.
	reach := [][]int{{0, 1}, {1, 2}, {0, 2}}

	counted := 0
	for i, reached := range reach {
		granted := 0
		for _, node := range reached {
			reply := nodes.servers[node].Do(t, "EVAL", countingAcquireScript, "1", "counted", "client"+strconv.Itoa(i), strconv.Itoa(limit))
			if reply == "1" {
				granted++
			}
		}
		if granted >= round.Quorum(3) {
			counted++
		}
	}
	require.Equal(t, 3, counted, "counting admits the three clients: the interleaving is reproduced")

	var permits []Permit
	for i, reached := range reach {
		var addresses []string
		for node, server := range nodes.servers {
			proxy := faultnet.New(t, server.Addr())
			if node != reached[0] && node != reached[1] {
				proxy.Partition()
			}
			addresses = append(addresses, proxy.Addr())
		}
		client, err := New(addresses, Options{})
		require.NoError(t, err)
		t.Cleanup(func() { client.Close() })
		permit, err := client.NewSemaphore("slots", limit, MutexOptions{TTL: 10 * time.Second}).TryAcquire(context.Background())
		if i < limit {
			require.NoError(t, err, "client %d", i)
			permits = append(permits, permit)
			continue
		}
		require.ErrorIs(t, err, ErrNotAcquired, "client %d would be a third holder", i)
	}
	assert.NotEqual(t, permits[0].Slot(), permits[1].Slot(), "one holder per slot")
	for slot := range limit {
		holders := 0
		for _, server := range nodes.servers {
			if server.Do(t, "EXISTS", permitKey("slots", slot)) == "1" {
				holders++
			}
		}
		assert.GreaterOrEqual(t, holders, round.Quorum(3), "slot %d is held by a quorum", slot)
	}
}

// A permit speaks of its own hold only: released, it answers as a hold
// that ended, and releasing it again does not release the next holder of
// its slot, even within one process where the slot is one Mutex.
func TestPermitReleasedTwiceLeavesTheNextHolderAlone(t *testing.T) {
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{})
	ctx := context.Background()
	semaphore := client.NewSemaphore("single", 1, MutexOptions{TTL: 10 * time.Second})
	first, err := semaphore.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, first.Until().IsZero())
	_, err = semaphore.TryAcquire(ctx)
	require.ErrorIs(t, err, ErrNotAcquired, "the only permit is held")
	require.NoError(t, first.Release(ctx))

	second, err := semaphore.TryAcquire(ctx)
	require.NoError(t, err)
	require.Equal(t, first.Slot(), second.Slot())
	assert.ErrorIs(t, first.Release(ctx), ErrNotHeld)
	assert.ErrorIs(t, first.Extend(ctx), ErrNotHeld)
	assert.True(t, first.Until().IsZero())
	assert.Empty(t, first.Token())
	select {
	case <-first.Done():
	default:
		t.Fatal("a released permit's Done is open")
	}
	select {
	case <-second.Done():
		t.Fatal("the second holder's permit ended")
	default:
	}
	assert.Equal(t, second.Token(), client.values(t, permitKey("single", second.Slot()))[0], "the second holder keeps its slot")
	require.NoError(t, second.Extend(ctx))
	require.NoError(t, second.Release(ctx))
	assert.ErrorIs(t, Permit{}.Release(ctx), ErrNotHeld, "the zero Permit")
}

// Acquire waits for a permit: the release of the one another holder
// releases wakes it, although it would retry on its own only every hour.
func TestSemaphoreAcquireIsWokenByARelease(t *testing.T) {
	redistest.RequireReal(t) // notifications need RESP3 pub/sub
	nodes := startCluster(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	options := MutexOptions{TTL: 10 * time.Second, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}
	holders := nodes.client(t, Options{})
	held := make([]Permit, 2)
	for i := range held {
		permit, err := holders.NewSemaphore("pool", 2, options).TryAcquire(ctx)
		require.NoError(t, err)
		held[i] = permit
		onEveryNode(t, nodes, permit.Key())
	}
	observer := &failedAttempts{failed: make(chan struct{}, 64)}
	waiter := nodes.client(t, Options{Observer: observer}).NewSemaphore("pool", 2, options)
	acquired := make(chan error, 1)
	var permit Permit
	go func() {
		var err error
		permit, err = waiter.Acquire(ctx)
		acquired <- err
	}()
	for range 2 { // one pass over both slots failed
		select {
		case <-observer.failed:
		case <-ctx.Done():
			t.Fatal("the waiter made no attempt")
		}
	}
	require.NoError(t, held[1].Release(ctx))
	require.NoError(t, <-acquired)
	assert.Equal(t, held[1].Slot(), permit.Slot(), "the slot released")
	require.NoError(t, permit.Release(ctx))
	require.NoError(t, held[0].Release(ctx))
}

// failedAttempts tells a test of failed acquisition attempts.
type failedAttempts struct {
	NopObserver
	failed chan struct{}
}

func (o *failedAttempts) OnAcquire(event AcquireEvent) {
	if event.Err != nil {
		select {
		case o.failed <- struct{}{}:
		default:
		}
	}
}

// Close ends the wait of an Acquire at once, whatever its retry delay.
func TestSemaphoreAcquireEndsAtClose(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	options := MutexOptions{TTL: 10 * time.Second, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}
	holder, err := nodes.client(t, Options{}).NewSemaphore("closing", 1, options).TryAcquire(ctx)
	require.NoError(t, err)
	defer holder.Release(ctx)
	observer := &failedAttempts{failed: make(chan struct{}, 64)}
	client, err := New(nodes.addresses, Options{Observer: observer})
	require.NoError(t, err)
	acquired := make(chan error, 1)
	go func() {
		_, err := client.NewSemaphore("closing", 1, options).Acquire(ctx)
		acquired <- err
	}()
	<-observer.failed
	require.NoError(t, client.Close())
	assert.ErrorIs(t, <-acquired, ErrClosed)
}

// MaxTries bounds the attempts of one Acquire.
func TestSemaphoreAcquireStopsAfterMaxTries(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	options := MutexOptions{TTL: 10 * time.Second, MaxTries: 2, RetryDelayMin: time.Millisecond, RetryDelayMax: time.Millisecond}
	holder, err := nodes.client(t, Options{}).NewSemaphore("bounded", 2, options).TryAcquire(ctx)
	require.NoError(t, err)
	defer holder.Release(ctx)
	other, err := nodes.client(t, Options{}).NewSemaphore("bounded", 2, options).TryAcquire(ctx)
	require.NoError(t, err)
	defer other.Release(ctx)
	observer := &failedAttempts{failed: make(chan struct{}, 64)}
	_, err = nodes.client(t, Options{Observer: observer}).NewSemaphore("bounded", 2, options).Acquire(ctx)
	require.ErrorIs(t, err, ErrNotAcquired)
	// The first pass tries the next slot, then both in one round; the
	// second, crowded, both in one round.
	assert.Len(t, observer.failed, 3, "two passes")
}

// A Semaphore refuses a limit out of range, and options that do not make
// one key per permit.
func TestSemaphoreRefusesInvalidOptions(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	ctx := context.Background()
	tests := []struct {
		name    string
		limit   int
		options MutexOptions
		field   string
	}{
		{name: "no permit", limit: 0, field: "limit"},
		{name: "too many permits", limit: MaxSemaphoreLimit + 1, field: "limit"},
		{name: "several keys", limit: 2, options: MutexOptions{Keys: []string{"other"}}, field: "MutexOptions.Keys"},
		{name: "a token", limit: 2, options: MutexOptions{Token: "shared"}, field: "MutexOptions.Token"},
		{name: "a TTL too short", limit: 2, options: MutexOptions{TTL: time.Millisecond}, field: "MutexOptions.TTL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			semaphore := client.NewSemaphore("invalid", tt.limit, tt.options)
			_, err := semaphore.TryAcquire(ctx)
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), tt.field)
			_, err = semaphore.Acquire(ctx)
			assert.ErrorIs(t, err, ErrInvalidOptions)
		})
	}
}

// A TryAcquire whose context ends while it tries the slots says so first:
// its error matches the context's, not only ErrNotAcquired.
func TestSemaphoreTryAcquireAfterItsContextEnded(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	holders := nodes.client(t, Options{})
	for range 2 {
		_, err := holders.NewSemaphore("ended", 2, MutexOptions{TTL: 10 * time.Second}).TryAcquire(ctx)
		require.NoError(t, err)
	}
	tryContext, cancel := context.WithCancel(ctx)
	defer cancel()
	// The context ends as the first slot's attempt fails.
	client := nodes.client(t, Options{Observer: &cancelOnFailure{cancel: cancel}})
	_, err := client.NewSemaphore("ended", 2, MutexOptions{TTL: 10 * time.Second}).TryAcquire(tryContext)
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, ErrNotAcquired)
}

// cancelOnFailure cancels a context when an acquisition attempt fails.
type cancelOnFailure struct {
	NopObserver
	cancel context.CancelFunc
}

func (o *cancelOnFailure) OnAcquire(event AcquireEvent) {
	if event.Err != nil {
		o.cancel()
	}
}
