package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/internal/latency"
	"github.com/lockmux/lockmux/redlock"
)

// fencedStore is the resource that the demo's lock protects: a counter in
// this process's memory that, like a database row with a fence column,
// accepts a write only if its fence is at least the highest it accepted.
// A holder that lost its lock without noticing would write with an older
// fence than its successor's and be refused. It is safe for concurrent use.
type fencedStore struct {
	mu         sync.Mutex
	value      int64
	lastFence  int64
	accepted   int64
	rejected   int64 // writes refused for an older fence: stale holders
	repeated   int64 // writes accepted with the fence of the previous one
	firstFence int64
}

// read returns the counter.
func (s *fencedStore) read() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value
}

// write sets the counter if fence is not older than the last accepted one,
// and reports whether it did.
func (s *fencedStore) write(fence, value int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence < s.lastFence {
		s.rejected++
		return false
	}
	if fence == s.lastFence && s.accepted > 0 {
		s.repeated++ // two holds with one fence: fences are out of order
	}
	if s.accepted == 0 {
		s.firstFence = fence
	}
	s.value, s.lastFence = value, fence
	s.accepted++
	return true
}

// storeState is a copy of the fenced store's counters.
type storeState struct {
	value, lastFence, firstFence, accepted, rejected, repeated int64
}

func (s *fencedStore) state() storeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return storeState{s.value, s.lastFence, s.firstFence, s.accepted, s.rejected, s.repeated}
}

// demoCounters are what the demo's workers count.
type demoCounters struct {
	holds       atomic.Int64
	overlaps    atomic.Int64 // holds that began while another was inside
	lockErrors  atomic.Int64
	unconfirmed atomic.Int64 // releases that a quorum did not confirm
	unfenced    atomic.Int64 // holds without a fence (Mutex.Fence returned 0)
	inside      atomic.Int64 // workers inside the critical section now
	wait        latency.Histogram
	release     latency.Histogram

	mu        sync.Mutex
	lastError error
}

func (c *demoCounters) recordError(err error) {
	c.lockErrors.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastError = err
}

// demoWorker takes the lock in a loop until ctx ends, and in each hold
// reads the counter, works a little, and writes the counter plus one with
// the hold's fence.
func demoWorker(ctx context.Context, m *redlock.Mutex, store *fencedStore, counters *demoCounters) {
	for ctx.Err() == nil {
		start := time.Now()
		if err := m.Lock(ctx); err != nil {
			if ctx.Err() == nil {
				counters.recordError(err)
				pause(ctx, errorPause)
			}
			continue
		}
		counters.wait.Record(time.Since(start))
		counters.holds.Add(1)
		fence := m.Fence()
		if fence == 0 {
			counters.unfenced.Add(1)
		}
		if counters.inside.Add(1) != 1 {
			counters.overlaps.Add(1)
		}
		value := store.read()
		time.Sleep(time.Duration(100+rand.IntN(400)) * time.Microsecond) // the work, a window for a rival
		store.write(fence, value+1)
		counters.inside.Add(-1)

		releaseContext, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		released := time.Now()
		err := m.Unlock(releaseContext)
		counters.release.Record(time.Since(released))
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			counters.unconfirmed.Add(1)
		}
		pause(ctx, time.Duration(rand.IntN(500))*time.Microsecond) // let the others have a turn
	}
}

// nodeEvents is the demo's chaos: it takes one node down at a time, in
// turn, and brings it back, until ctx ends or too little time is left.
type nodeEvents struct {
	cluster  *localCluster
	progress *progressLine
	down     time.Duration // how long a node stays down
	gap      time.Duration // between two events

	// wipes makes every third event a restart without data (Wipe), for
	// clients that quarantine.
	wipes bool

	stopped, crashed, wiped atomic.Int64 // events
	failures                atomic.Int64 // nodes that could not be taken down or brought back
	outage                  atomic.Int64 // index+1 of the node that is down, 0 when none
}

// newNodeEvents paces the events to the demo's duration.
func newNodeEvents(cluster *localCluster, progress *progressLine, duration time.Duration, wipes bool) *nodeEvents {
	return &nodeEvents{
		cluster:  cluster,
		progress: progress,
		wipes:    wipes,
		down:     min(max(duration/8, 300*time.Millisecond), 2*time.Second),
		gap:      min(max(duration/16, 200*time.Millisecond), time.Second),
	}
}

// run takes the nodes down and up until ctx ends or the deadline is too
// near for another event. Every node is up when it returns.
func (e *nodeEvents) run(ctx context.Context, deadline time.Time) {
	for event := 0; ; event++ {
		pause(ctx, e.gap)
		if ctx.Err() != nil || time.Until(deadline) < e.down+e.gap {
			return
		}
		index := event % len(e.cluster.servers)
		server := e.cluster.servers[index]
		var what string
		var err error
		switch {
		case e.wipes && event%3 == 2:
			what, err = server.Wipe()
			e.wiped.Add(1)
		case event%2 == 0:
			what, err = server.Stop()
			e.stopped.Add(1)
		default:
			what, err = server.Crash()
			e.crashed.Add(1)
		}
		if err != nil {
			e.failures.Add(1)
			e.progress.event("node %d (%s): could not take it down: %v", index+1, server.Address(), err)
			continue
		}
		e.outage.Store(int64(index + 1))
		e.progress.event("node %d (%s) %s", index+1, server.Address(), what)
		pause(ctx, e.down)
		what, err = server.Recover()
		e.outage.Store(0)
		if err != nil {
			e.failures.Add(1)
			e.progress.event("node %d (%s): could not bring it back: %v", index+1, server.Address(), err)
			continue
		}
		e.progress.event("node %d (%s) %s", index+1, server.Address(), what)
	}
}
