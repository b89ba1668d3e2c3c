package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/workgroup"
)

func TestLockUnlockOnEveryNode(t *testing.T) {
	for _, n := range []int{1, 3, 5} {
		t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
			client := startCluster(t, n, redistest.Options{}).client(t, Options{})
			m := client.NewMutex("orders:1", MutexOptions{TTL: 10 * time.Second})
			before := time.Now()
			require.NoError(t, m.Lock(context.Background()))
			after := time.Now()

			token := m.Token()
			assert.Len(t, token, 40)
			assert.Equal(t, repeat(token, n), client.values(t, "orders:1"))
			pttl := client.do(t, 0, "PTTL", "orders:1").Int
			assert.InDelta(t, 10000, pttl, 1000, "the key carries the TTL")
			drift := 10*time.Second/100 + 2*time.Millisecond
			assert.False(t, m.Until().After(after.Add(10*time.Second-drift)), "validity ends at most ttl − drift after the start")
			assert.True(t, m.Until().After(before.Add(10*time.Second-drift-time.Second)))

			require.NoError(t, m.Unlock(context.Background()))
			assert.Equal(t, repeat("", n), client.values(t, "orders:1"), "unlock removes the key everywhere")
			assert.Empty(t, m.Token())
			assert.True(t, m.Until().IsZero())
			assert.ErrorIs(t, m.Unlock(context.Background()), ErrNotHeld)

			require.NoError(t, m.Lock(context.Background()), "a Mutex is reusable")
			assert.NotEqual(t, token, m.Token(), "each hold has its own token")
			require.NoError(t, m.Unlock(context.Background()))
		})
	}
}

func TestTryLockHeldByAnotherIsOneRoundTrip(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	holder := nodes.client(t, Options{})
	contender := nodes.client(t, Options{})
	held := holder.NewMutex("k", MutexOptions{})
	require.NoError(t, held.Lock(context.Background()))

	scriptsBefore := make([]int, 3)
	for i := range scriptsBefore {
		scriptsBefore[i] = holder.commandCalls(t, i, "eval")
	}
	m := contender.NewMutex("k", MutexOptions{})
	err := m.TryLock(context.Background())
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.NotErrorIs(t, err, ErrQuorumUnreachable)
	var quorumError *QuorumError
	require.ErrorAs(t, err, &quorumError)
	assert.Equal(t, 0, quorumError.Got)
	assert.Equal(t, 2, quorumError.Need)
	assert.Equal(t, OutcomeHeld, quorumError.Nodes[0].Outcome)
	assert.Equal(t, repeat(OutcomeHeld, 3), []Outcome{quorumError.Nodes[0].Outcome, quorumError.Nodes[1].Outcome, quorumError.Nodes[2].Outcome})
	for i := range scriptsBefore {
		assert.Equal(t, scriptsBefore[i], holder.commandCalls(t, i, "eval"), "node %d: a definite refusal needs no release", i)
	}
	assert.Equal(t, repeat(held.Token(), 3), holder.values(t, "k"), "the holder's keys are untouched")
}

func TestLocalWaitersDoNotTouchTheNetwork(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	attempts := client.Stats().LockAttempts

	assert.ErrorIs(t, m.TryLock(context.Background()), ErrNotAcquired)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, m.Lock(ctx), context.Canceled)
	assert.Equal(t, attempts, client.Stats().LockAttempts, "local waiters made no attempt")

	var waiter workgroup.Group
	waiter.Go(func() error { return m.Lock(context.Background()) })
	require.NoError(t, m.Unlock(context.Background()))
	require.NoError(t, waiter.Wait(), "the waiter gets the Mutex once it is unlocked")
	assert.Equal(t, attempts+1, client.Stats().LockAttempts, "the waiter made exactly one attempt")
	require.NoError(t, m.Unlock(context.Background()))
}

func TestQuorumSurvivesAMinorityDown(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 5, redistest.Options{})
	client := nodes.client(t, Options{})
	nodes.servers[0].Kill9()
	nodes.servers[1].Kill9()

	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	require.NoError(t, m.Extend(context.Background()))
	require.NoError(t, m.Unlock(context.Background()))
	assert.Equal(t, uint64(0), client.Stats().NotAcquired)
}

func TestQuorumUnreachableIsReportedAtOnce(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	nodes.servers[0].Kill9()
	nodes.servers[1].Kill9()

	m := client.NewMutex("k", MutexOptions{})
	// Without the early answer Lock would retry until this context ends.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	err := m.Lock(ctx)
	require.ErrorIs(t, err, ErrQuorumUnreachable)
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.NoError(t, ctx.Err())
	var quorumError *QuorumError
	require.ErrorAs(t, err, &quorumError)
	assert.True(t, quorumError.Unreachable)
	assert.Contains(t, err.Error(), nodes.addresses[0], "the error names the nodes")
}

func TestConcurrentHoldersNeverOverlap(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	const workers, rounds = 6, 30
	clients := make([]*Client, workers)
	for i := range clients {
		// A generous node timeout: a slow round on a busy machine must not
		// fail the test, which is about exclusion.
		clients[i] = nodes.client(t, Options{NodeTimeout: time.Second, RetryDelayMin: time.Millisecond, RetryDelayMax: 3 * time.Millisecond})
	}
	var inside, overlaps, acquisitions int64
	var guard = make(chan struct{}, 1)
	enter := func() {
		select {
		case guard <- struct{}{}:
		default:
			overlaps++
		}
	}
	var holders workgroup.Group
	for _, client := range clients {
		holders.Go(func() error {
			m := client.NewMutex("shared", MutexOptions{TTL: 5 * time.Second})
			for range rounds {
				if err := m.Lock(context.Background()); err != nil {
					return err
				}
				enter()
				inside++
				acquisitions++
				inside--
				<-guard
				if err := m.Unlock(context.Background()); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, holders.Wait())
	assert.Zero(t, overlaps)
	assert.Equal(t, int64(workers*rounds), acquisitions)
}

func TestDoRunsUnderTheLock(t *testing.T) {
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{})
	var seen []string
	err := client.Do(context.Background(), "job", MutexOptions{}, func(ctx context.Context) error {
		seen = client.values(t, "job")
		assert.NoError(t, ctx.Err(), "the context lives while the hold does")
		return errors.New("work failed")
	})
	require.EqualError(t, err, "work failed")
	assert.Len(t, seen[0], 40)
	assert.Equal(t, repeat(seen[0], 3), seen)
	assert.Equal(t, repeat("", 3), client.values(t, "job"), "Do unlocks")
}

func TestInvalidOptionsAreReportedByEveryMethod(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	m := client.NewMutex("k", MutexOptions{TTL: time.Millisecond})
	assert.ErrorIs(t, m.Lock(context.Background()), ErrInvalidOptions)
	assert.ErrorIs(t, m.TryLock(context.Background()), ErrInvalidOptions)
	assert.ErrorIs(t, m.Extend(context.Background()), ErrInvalidOptions)
	assert.ErrorIs(t, m.Unlock(context.Background()), ErrInvalidOptions)
	_, err := New(nil, Options{})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = New([]string{"ftp://x"}, Options{})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

func TestClosedClient(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	require.NoError(t, client.Close())
	assert.ErrorIs(t, m.Unlock(context.Background()), ErrClosed)
	assert.ErrorIs(t, m.TryLock(context.Background()), ErrClosed)
}

// A failed TryLock's error reports its own attempt: goroutines that share
// a Mutex and fail one after the other never see each other's round in
// their errors. Under -race it also shows that the error is built before
// the next goroutine may start an attempt.
func TestFailedTryLockReportsItsOwnAttempt(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{})
	require.NoError(t, holder.Lock(context.Background()))
	shared := nodes.client(t, Options{}).NewMutex("k", MutexOptions{})

	var contenders workgroup.Group
	for range 2 {
		contenders.Go(func() error {
			for range 300 {
				err := shared.TryLock(context.Background())
				var quorum *QuorumError
				if !errors.As(err, &quorum) {
					if !errors.Is(err, ErrNotAcquired) {
						return fmt.Errorf("unexpected error: %w", err)
					}
					continue // held by the other goroutine: no attempt of its own
				}
				for _, node := range quorum.Nodes {
					if node.Outcome != OutcomeHeld {
						return fmt.Errorf("an error that is not its own attempt's: %w", quorum)
					}
				}
			}
			return nil
		})
	}
	assert.NoError(t, contenders.Wait())
}

// Of two Unlocks of one hold that race, one releases it and the other finds
// it not held; the Mutex can then be locked again at once. A second release
// of the same hold would also give up the Mutex's local turn a second time:
// block forever, or take the turn of the goroutine that locked next.
func TestRacingUnlocksReleaseOnce(t *testing.T) {
	// A node timeout far above the default: the spinning reader below
	// must not make a loaded machine's release time out.
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{NodeTimeout: 2 * time.Second})
	m := client.NewMutex("k", MutexOptions{})
	for range 200 {
		require.NoError(t, m.Lock(context.Background()))
		start := make(chan struct{})
		results := make(chan error, 2)
		for range 2 {
			go func() {
				<-start
				results <- m.Unlock(context.Background())
			}()
		}
		// A reader of the hold's state contends for the Mutex's state lock,
		// which widens any gap between an Unlock's check and its end of
		// the hold.
		reading := make(chan struct{})
		var reader sync.WaitGroup
		reader.Go(func() {
			for {
				select {
				case <-reading:
					return
				default:
					m.Until()
				}
			}
		})
		close(start)
		var first, second error
		for i, result := range []*error{&first, &second} {
			select {
			case *result = <-results:
			case <-time.After(10 * time.Second):
				close(reading)
				t.Fatalf("Unlock %d of 2 never returned: the hold was released twice", i+1)
			}
		}
		close(reading)
		reader.Wait()
		if first != nil {
			first, second = second, first
		}
		require.NoError(t, first, "one Unlock releases the hold")
		require.ErrorIs(t, second, ErrNotHeld, "the other finds it released")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := m.TryLock(ctx)
		cancel()
		require.NoError(t, err, "the Mutex is free again, locally and on the nodes")
		require.NoError(t, m.Unlock(context.Background()))
	}
}

// A goroutine that extends the hold while another unlocks it, the
// heartbeat pattern, never mixes its round with the release: the Unlock
// that succeeds leaves no key behind, and Extend only ever reports success,
// a hold that is gone, or no hold.
func TestExtendRacingUnlock(t *testing.T) {
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{})
	m := client.NewMutex("k", MutexOptions{})
	for range 100 {
		require.NoError(t, m.Lock(context.Background()))
		var heartbeat workgroup.Group
		heartbeat.Go(func() error {
			for {
				if err := m.Extend(context.Background()); err != nil {
					return err
				}
			}
		})
		require.NoError(t, m.Unlock(context.Background()))
		err := heartbeat.Wait()
		if !errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrLockLost) {
			t.Fatalf("Extend racing Unlock: %v", err)
		}
		require.Equal(t, repeat("", 3), client.values(t, "k"), "the release removed the key from every node")
	}
}

// Attempts and releases of one Client reach every node in one order, so
// its goroutines racing for a key never split the nodes between them: an
// attempt that fails was refused by every node. A split vote would cost
// both attempts a backoff.
func TestRacingGoroutinesOfOneClientNeverSplitTheNodes(t *testing.T) {
	client := startCluster(t, 5, redistest.Options{}).client(t, Options{})
	var racers workgroup.Group
	for range 8 {
		racers.Go(func() error {
			m := client.NewMutex("k", MutexOptions{})
			for range 200 {
				err := m.TryLock(context.Background())
				if err == nil {
					if err := m.Unlock(context.Background()); err != nil {
						return fmt.Errorf("unlock: %w", err)
					}
					continue
				}
				var quorum *QuorumError
				if !errors.As(err, &quorum) || quorum.Got != 0 {
					return err
				}
			}
			return nil
		})
	}
	assert.NoError(t, racers.Wait())
}
