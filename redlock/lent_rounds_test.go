package redlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// A held Mutex keeps no round: its acquisition gave the rounds back when
// the hold started, and its release gives them back when it is done,
// whatever the kind of lock, so that a Client keeping many holds keeps
// as many rounds as operations run at once.
func TestHeldMutexKeepsNoRound(t *testing.T) {
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{})
	ctx := context.Background()
	for i, options := range []MutexOptions{
		{},
		{AutoExtend: true},
		{Fencing: true},
		{Fair: true},
		{Keys: []string{"kept:keys"}},
	} {
		m := client.NewMutex("kept:"+strconv.Itoa(i), options)
		require.NoError(t, m.Lock(ctx), "%+v", options)
		assert.Nil(t, m.acquisition.lent, "held, %+v", options)
		require.NoError(t, m.Unlock(ctx), "%+v", options)
		assert.Nil(t, m.acquisition.lent, "released, %+v", options)
	}

	semaphore := client.NewSemaphore("kept:semaphore", 2, MutexOptions{})
	permits := make([]Permit, 2)
	for i := range permits {
		var err error
		permits[i], err = semaphore.Acquire(ctx)
		require.NoError(t, err)
	}
	for _, slot := range semaphore.slots {
		assert.Nil(t, slot.acquisition.lent, "a held permit's slot")
	}
	for _, permit := range permits {
		require.NoError(t, permit.Release(ctx))
	}
	for _, slot := range semaphore.slots {
		assert.Nil(t, slot.acquisition.lent, "a released permit's slot")
	}
}

// A failed TryLock gives the rounds back with the turn, its error made
// from the round's tally first.
func TestFailedTryLockKeepsNoRound(t *testing.T) {
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{})
	ctx := context.Background()
	holder := client.NewMutex("kept:tried", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(ctx))
	other := client.NewMutex("kept:tried", MutexOptions{})
	err := other.TryLock(ctx)
	var quorum *QuorumError
	require.ErrorAs(t, err, &quorum)
	require.Len(t, quorum.Nodes, 3)
	for _, node := range quorum.Nodes {
		assert.Equal(t, OutcomeHeld, node.Outcome, "the error is the attempt's")
	}
	assert.Nil(t, other.acquisition.lent)
	require.NoError(t, holder.Unlock(ctx))
}
