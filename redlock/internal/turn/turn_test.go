package turn

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A turn is taken by one goroutine at a time; a waiter gets it when it is
// given, and a turn nobody contended keeps no channel.
func TestTurnIsTakenByOneAtATime(t *testing.T) {
	var turn Turn
	require.True(t, turn.TryTake())
	assert.False(t, turn.TryTake(), "taken twice")
	turn.Give()
	require.True(t, turn.TryTake(), "not free once given")
	assert.Nil(t, turn.handed.Load(), "an uncontended turn made its channel")

	taken := make(chan bool)
	go func() { taken <- turn.Take(nil, nil) }()
	require.True(t, waitUntil(func() bool { return turn.state.Load() == turnTaken+turnWaiter }), "the waiter is not counted")
	turn.Give()
	assert.True(t, <-taken, "the waiter did not get the turn given")
	assert.Equal(t, turnTaken, turn.state.Load())
	turn.Give()
	assert.Zero(t, turn.state.Load(), "not free")
}

// A waiter that stops waiting leaves no count behind: the next give frees
// the turn, whichever of the give and the stop came first.
func TestTurnWaiterThatStopsLeavesNoTrace(t *testing.T) {
	var turn Turn
	require.True(t, turn.TryTake())
	done := make(chan struct{})
	taken := make(chan bool)
	go func() { taken <- turn.Take(done, nil) }()
	require.True(t, waitUntil(func() bool { return turn.state.Load() == turnTaken+turnWaiter }))
	close(done)
	assert.False(t, <-taken, "took the turn after its wait ended")
	turn.Give()
	assert.Zero(t, turn.state.Load(), "not free")

	// Given to a waiter whose wait ended: it passes the turn on.
	require.True(t, turn.TryTake())
	closing := make(chan struct{})
	go func() { taken <- turn.Take(nil, closing) }()
	require.True(t, waitUntil(func() bool { return turn.state.Load() == turnTaken+turnWaiter }))
	turn.Give()
	close(closing)
	if <-taken { // the turn came before the end of the wait
		turn.Give()
	}
	require.True(t, waitUntil(func() bool { return turn.state.Load() == 0 }), "the turn was not passed on")

	// The same, the give certainly first: a waiter counted, served, then
	// stopping.
	require.True(t, turn.TryTake())
	handed := turn.channel()
	turn.state.Add(turnWaiter)
	turn.Give()
	turn.stopWaiting(handed)
	assert.Zero(t, turn.state.Load(), "the turn was not passed on")
	assert.Empty(t, handed, "the turn is still on its way")
}

// Many goroutines that take the turn, some of them giving up their wait,
// never have it two at a time, and leave it free.
func TestTurnExcludesUnderContention(t *testing.T) {
	var turn Turn
	var inside, overlaps atomic.Int32
	var group sync.WaitGroup
	for g := range 8 {
		group.Add(1)
		go func() {
			defer group.Done()
			for i := range 2000 {
				var done chan struct{}
				if (g+i)%3 == 0 {
					done = make(chan struct{})
					close(done)
				}
				if !turn.Take(done, nil) {
					continue
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				turn.Give()
			}
		}()
	}
	group.Wait()
	assert.Zero(t, overlaps.Load(), "two goroutines had the turn at once")
	assert.Zero(t, turn.state.Load(), "the turn is not free")
}

// waitUntil reports whether condition became true within 5 s.
func waitUntil(condition func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); !condition(); runtime.Gosched() {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// A give while the turn is pinned waits for Unpin, which makes it: the
// waiter gets the turn only then. Without a give, Unpin gives nothing.
func TestPinnedTurnIsGivenAtUnpin(t *testing.T) {
	var turn Turn
	require.True(t, turn.TryTake())
	turn.Pin()
	taken := make(chan bool)
	go func() { taken <- turn.Take(nil, nil) }()
	require.True(t, waitUntil(func() bool { return turn.state.Load()&^turnFlags == turnTaken+turnWaiter }), "the waiter is not counted")
	turn.Give() // another goroutine's, while the taker still runs
	assert.Equal(t, turnTaken+turnWaiter+turnPinned+turnDeferred, turn.state.Load(), "the turn was given while pinned")
	turn.Unpin()
	assert.True(t, <-taken, "the waiter did not get the turn at Unpin")
	assert.Equal(t, turnTaken, turn.state.Load())

	turn.Pin()
	turn.Unpin()
	assert.Equal(t, turnTaken, turn.state.Load(), "Unpin gave the turn")
	turn.Give()
	assert.Zero(t, turn.state.Load(), "not free")
}
