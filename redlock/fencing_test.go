package redlock

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/workgroup"
)

func TestFencesIncreaseAcrossClients(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	clients := []*Client{nodes.client(t, Options{}), nodes.client(t, Options{})}
	var last int64
	for i := range 10 {
		m := clients[i%2].NewMutex("resource", MutexOptions{Fencing: true})
		require.NoError(t, m.Lock(context.Background()))
		assert.Greater(t, m.Fence(), last)
		last = m.Fence()
		require.NoError(t, m.Unlock(context.Background()))
		assert.Zero(t, m.Fence(), "no fence without a hold")
	}
	committed := 0
	for i := range nodes.servers {
		if string(clients[0].do(t, i, "GET", "resource"+fenceKeySuffix).Str) == strconv.FormatInt(last, 10) {
			committed++
		}
	}
	assert.GreaterOrEqual(t, committed, 2, "the last fence was committed on a quorum")
}

// RELIABILITY.md §0.6 and §8.6: with counters (10, 50, 0, 0, 0), A locks
// nodes 1–3 and B later locks nodes 1, 4 and 5. The maximum of per-node
// INCRs would give A 51 and B 12; the commit round makes B's fence larger.
func TestFencingCounterexample(t *testing.T) {
	nodes := startCluster(t, 5, redistest.Options{})
	client := nodes.client(t, Options{})
	counterKey := "resource" + fenceKeySuffix
	for i, counter := range []string{"10", "50", "0", "0", "0"} {
		client.do(t, i, "SET", counterKey, counter)
	}
	// A's quorum is nodes 1, 2, 3: nodes 4 and 5 are busy with another lock.
	client.do(t, 3, "SET", "resource", "other", "PX", "60000")
	client.do(t, 4, "SET", "resource", "other", "PX", "60000")
	a := client.NewMutex("resource", MutexOptions{Fencing: true})
	require.NoError(t, a.Lock(context.Background()))
	fenceA := a.Fence() // read while A holds: an unlocked Mutex has no fence
	assert.Equal(t, int64(51), fenceA)
	require.NoError(t, a.Unlock(context.Background()))

	// B's quorum is nodes 1, 4, 5.
	for i := range nodes.servers {
		client.do(t, i, "DEL", "resource")
	}
	client.do(t, 1, "SET", "resource", "other", "PX", "60000")
	client.do(t, 2, "SET", "resource", "other", "PX", "60000")
	b := client.NewMutex("resource", MutexOptions{Fencing: true})
	require.NoError(t, b.Lock(context.Background()))
	assert.Greater(t, b.Fence(), fenceA, "B's fence must exceed A's")
	assert.Equal(t, int64(52), b.Fence())
	require.NoError(t, b.Unlock(context.Background()))
}

// Fences strictly increase over many contended acquisitions while nodes
// restart (AOF with appendfsync always keeps the counters).
func TestFencesStayMonotonicAcrossRestarts(t *testing.T) {
	redistest.RequireReal(t)
	// LOCKMUX_FENCE_ACQUISITIONS=10000 runs the full count of the issue.
	acquisitions := 1000
	if n, err := strconv.Atoi(os.Getenv("LOCKMUX_FENCE_ACQUISITIONS")); err == nil && n > 0 {
		acquisitions = n
	}
	nodes := startCluster(t, 5, redistest.Options{Persistence: redistest.PersistenceAOF})
	const workers = 4
	var mu sync.Mutex
	var fences []int64
	var group workgroup.Group
	for w := range workers {
		client := nodes.client(t, Options{NodeTimeout: 2 * time.Second}) // fsyncs under load outlast 50 ms
		group.Go(func() error {
			m := client.NewMutex("counter", MutexOptions{Fencing: true})
			for range acquisitions / workers {
				if err := m.Lock(context.Background()); err != nil {
					return fmt.Errorf("worker %d: %w", w, err)
				}
				mu.Lock()
				fences = append(fences, m.Fence()) // in the order of the holds
				mu.Unlock()
				if err := m.Unlock(context.Background()); err != nil && !errorsIsLost(err) {
					return fmt.Errorf("worker %d: %w", w, err)
				}
			}
			return nil
		})
	}
	// Restart one node after another while the workers run.
	for round := range 3 {
		server := nodes.servers[round%5]
		server.Kill9()
		server.Restart(t)
	}
	require.NoError(t, group.Wait())
	require.Len(t, fences, acquisitions)
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d (%d) does not exceed fence %d (%d)", i, fences[i], i-1, fences[i-1])
		}
	}
}

func TestTokenAndFencingCannotBeCombined(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	err := client.NewMutex("k", MutexOptions{Fencing: true, Token: "abc"}).Lock(context.Background())
	assert.ErrorIs(t, err, ErrInvalidOptions)
}
