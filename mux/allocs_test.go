//go:build !race

package mux_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// TestRoundDoesNotAllocate pins the zero-allocation claim of a reused
// Round, for a caller alone and for concurrent callers.
func TestRoundDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	for _, n := range nodeCounts {
		t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
			group, _ := newGroup(t, n)
			round := group.NewRound()
			setNX(round, "allocs:serial", "token")
			roundTrip := func() {
				group.Send(round, time.Now().Add(5*time.Second))
				group.Wait(context.Background(), round, nil)
			}
			roundTrip() // warm up buffers
			assert.Zero(t, testing.AllocsPerRun(200, roundTrip), "serial")

			var wait, warm sync.WaitGroup
			stop := make(chan struct{})
			for g := range concurrentCallers - 1 {
				warm.Add(1)
				wait.Go(func() {
					round := group.NewRound()
					setNX(round, "allocs:parallel:"+strconv.Itoa(g), "token")
					group.Send(round, time.Now().Add(5*time.Second))
					group.Wait(context.Background(), round, nil)
					warm.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						group.Send(round, time.Now().Add(5*time.Second))
						group.Wait(context.Background(), round, nil)
					}
				})
			}
			// AllocsPerRun counts every goroutine's allocations, so the
			// other callers' rounds are included once they are warm.
			warm.Wait()
			allocations := testing.AllocsPerRun(200, roundTrip)
			close(stop)
			wait.Wait()
			assert.Zero(t, allocations, "concurrent")
		})
	}
}

// TestTrackDoesNotAllocate pins Track's claim: arming keys again with a
// reused Request allocates nothing.
func TestTrackDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t)
	group, _ := newGroup(t, 1)
	w := watch(t, group)
	w.connected(t, 1)
	request := mux.NewRequest("PTTL", "allocs:tracked")
	keys := []string{"allocs:tracked"}
	track := func() {
		if err := w.subscriber.Track(context.Background(), 0, request, 1, keys...); err != nil {
			t.Error(err)
		}
	}
	track() // warm up buffers
	assert.Zero(t, testing.AllocsPerRun(200, track))
}
