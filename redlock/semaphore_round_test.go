package redlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// A crowded Semaphore wins the one free slot of eight in one round over
// all of them, where trying the slots one after the other costs a round
// per held slot tried. With fencing, the node reads the slot's counter in
// that round, and the fences of the slot increase.
func TestSemaphoreWinsTheFreeSlotInOneRound(t *testing.T) {
	for _, fencing := range []bool{false, true} {
		t.Run(fmt.Sprintf("fencing=%v", fencing), func(t *testing.T) {
			nodes := startCluster(t, 3, redistest.Options{})
			ctx := context.Background()
			options := MutexOptions{TTL: 10 * time.Second, Fencing: fencing}
			const limit = 8
			held := map[int]bool{}
			other := nodes.client(t, Options{}).NewSemaphore("crowded", limit, options)
			for range limit - 1 {
				permit, err := other.TryAcquire(ctx)
				require.NoError(t, err)
				defer permit.Release(ctx)
				held[permit.Slot()] = true
			}
			free := 0
			for held[free] {
				free++
			}
			client := nodes.client(t, Options{})
			semaphore := client.NewSemaphore("crowded", limit, options)
			semaphore.next.Store(uint32(free + 1)) // the first slot tried is held
			var fence int64
			for i := range 3 {
				before := client.Stats().LockAttempts
				permit, err := semaphore.TryAcquire(ctx)
				require.NoError(t, err)
				assert.Equal(t, free, permit.Slot())
				attempts := client.Stats().LockAttempts - before
				if i == 0 {
					assert.EqualValues(t, 2, attempts, "the next slot alone, then every slot in one round")
				} else {
					assert.EqualValues(t, 1, attempts, "crowded: every slot in one round")
				}
				if fencing {
					assert.Greater(t, permit.Fence(), fence, "the slot's fences increase")
					fence = permit.Fence()
				} else {
					assert.Zero(t, permit.Fence())
				}
				require.NoError(t, permit.Release(ctx))
			}
		})
	}
}

// When nodes disagree on which slots are held, the one-round acquisition
// keeps the slot a quorum of nodes set and releases what the other nodes
// set with its token.
func TestSemaphoreOneRoundReleasesTheSlotsNotKept(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	// Slot 0 is held on node 0 only: node 0 sets slot 1, nodes 1 and 2
	// set slot 0, which is kept.
	nodes.servers[0].Do(t, "SET", permitKey("disagree", 0), "another", "PX", "60000")
	client := nodes.client(t, Options{})
	semaphore := client.NewSemaphore("disagree", 3, MutexOptions{TTL: 10 * time.Second})
	semaphore.next.Store(0)
	semaphore.crowded.Store(true)
	before := client.Stats().LockAttempts
	permit, err := semaphore.TryAcquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, permit.Slot())
	assert.EqualValues(t, 1, client.Stats().LockAttempts-before, "one round")
	token := permit.Token()
	require.NoError(t, client.Close()) // waits for the release carried to node 0
	assert.Equal(t, "0", nodes.servers[0].Do(t, "EXISTS", permitKey("disagree", 1)), "the slot node 0 set is released")
	assert.Equal(t, "another", nodes.servers[0].Do(t, "GET", permitKey("disagree", 0)))
	for _, server := range nodes.servers[1:] {
		assert.Equal(t, token, server.Do(t, "GET", permitKey("disagree", 0)), "the slot kept")
	}
}

// When every node sets a different slot, no slot has a quorum: the
// acquisition releases them and makes one more round, on the first slot
// enough nodes may have free.
func TestSemaphoreSplitChoiceTriesTheLikeliestSlot(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	ctx := context.Background()
	// Node 0 has every slot free and sets slot 0; node 1 has slot 0 held
	// and sets slot 1; node 2 has slots 0 and 1 held and sets slot 2. Slot
	// 1 is free on node 1 and not yet tried on node 0: the likeliest.
	nodes.servers[1].Do(t, "SET", permitKey("split", 0), "another", "PX", "60000")
	nodes.servers[2].Do(t, "SET", permitKey("split", 0), "another", "PX", "60000")
	nodes.servers[2].Do(t, "SET", permitKey("split", 1), "another", "PX", "60000")
	client := nodes.client(t, Options{})
	semaphore := client.NewSemaphore("split", 3, MutexOptions{TTL: 10 * time.Second})
	semaphore.next.Store(0)
	semaphore.crowded.Store(true)
	before := client.Stats().LockAttempts
	permit, err := semaphore.TryAcquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, permit.Slot())
	assert.EqualValues(t, 2, client.Stats().LockAttempts-before, "the round that split, and one on slot 1")
	token := permit.Token()
	require.NoError(t, client.Close())
	for node, server := range nodes.servers {
		for slot := range 3 {
			value := server.Do(t, "GET", permitKey("split", slot))
			if slot == 1 && node < 2 {
				assert.Equal(t, token, value, "node %d holds the permit", node)
				continue
			}
			assert.NotEqual(t, token, value, "node %d slot %d: what the first round set is released", node, slot)
		}
	}
}
