package redlock

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A turn is taken by one goroutine at a time; a waiter gets it when it is
// given, and a turn nobody contended keeps no channel.
func TestTurnIsTakenByOneAtATime(t *testing.T) {
	var turn turn
	require.True(t, turn.tryTake())
	assert.False(t, turn.tryTake(), "taken twice")
	turn.give()
	require.True(t, turn.tryTake(), "not free once given")
	assert.Nil(t, turn.handed.Load(), "an uncontended turn made its channel")

	taken := make(chan bool)
	go func() { taken <- turn.take(nil, nil) }()
	require.True(t, waitUntil(func() bool { return turn.state.Load() == turnTaken+turnWaiter }), "the waiter is not counted")
	turn.give()
	assert.True(t, <-taken, "the waiter did not get the turn given")
	assert.Equal(t, turnTaken, turn.state.Load())
	turn.give()
	assert.Zero(t, turn.state.Load(), "not free")
}

// A waiter that stops waiting leaves no count behind: the next give frees
// the turn, whichever of the give and the stop came first.
func TestTurnWaiterThatStopsLeavesNoTrace(t *testing.T) {
	var turn turn
	require.True(t, turn.tryTake())
	done := make(chan struct{})
	taken := make(chan bool)
	go func() { taken <- turn.take(done, nil) }()
	require.True(t, waitUntil(func() bool { return turn.state.Load() == turnTaken+turnWaiter }))
	close(done)
	assert.False(t, <-taken, "took the turn after its wait ended")
	turn.give()
	assert.Zero(t, turn.state.Load(), "not free")

	// Given to a waiter whose wait ended: it passes the turn on.
	require.True(t, turn.tryTake())
	closing := make(chan struct{})
	go func() { taken <- turn.take(nil, closing) }()
	require.True(t, waitUntil(func() bool { return turn.state.Load() == turnTaken+turnWaiter }))
	turn.give()
	close(closing)
	if <-taken { // the turn came before the end of the wait
		turn.give()
	}
	require.True(t, waitUntil(func() bool { return turn.state.Load() == 0 }), "the turn was not passed on")

	// The same, the give certainly first: a waiter counted, served, then
	// stopping.
	require.True(t, turn.tryTake())
	handed := turn.channel()
	turn.state.Add(turnWaiter)
	turn.give()
	turn.stopWaiting(handed)
	assert.Zero(t, turn.state.Load(), "the turn was not passed on")
	assert.Empty(t, handed, "the turn is still on its way")
}

// Many goroutines that take the turn, some of them giving up their wait,
// never have it two at a time, and leave it free.
func TestTurnExcludesUnderContention(t *testing.T) {
	var turn turn
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
				if !turn.take(done, nil) {
					continue
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				turn.give()
			}
		}()
	}
	group.Wait()
	assert.Zero(t, overlaps.Load(), "two goroutines had the turn at once")
	assert.Zero(t, turn.state.Load(), "the turn is not free")
}
