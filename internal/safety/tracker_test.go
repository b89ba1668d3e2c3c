//go:build linux

package safety_test

import (
	"github.com/lockmux/lockmux/internal/safety"
)

// tracker follows a Recorder's history as it grows, for the nemesis: who
// is inside the critical section, and the newest fence written per key.
type tracker struct {
	rec    *safety.Recorder
	next   int
	fences map[string]int64        // hold → fence
	inside map[string]safety.Event // hold → its enter event, while inside
	wrote  map[string]bool         // hold → it has written
	newest map[string]int64        // key → largest fence the resource applied
	done   map[string]safety.Event // hold → its KindDone
	exited map[string]bool         // hold → it has left
	// calling holds the holds whose Lock has not returned yet.
	calling map[string]bool
}

func newTracker(rec *safety.Recorder) *tracker {
	return &tracker{rec: rec, fences: map[string]int64{}, inside: map[string]safety.Event{}, wrote: map[string]bool{},
		newest: map[string]int64{}, done: map[string]safety.Event{}, exited: map[string]bool{}, calling: map[string]bool{}}
}

// update reads the events recorded since the last call.
func (tr *tracker) update() {
	events := tr.rec.Events(tr.next)
	tr.next += len(events)
	for _, e := range events {
		switch e.Kind {
		case safety.KindAcquireCall:
			tr.calling[e.Hold] = true
		case safety.KindAcquireFail, safety.KindAcquireInfo:
			delete(tr.calling, e.Hold)
		case safety.KindAcquireOK:
			delete(tr.calling, e.Hold)
			tr.fences[e.Hold] = e.Fence
		case safety.KindEnter:
			tr.inside[e.Hold] = e
		case safety.KindWriteOK:
			tr.wrote[e.Hold] = true
			tr.newest[e.Key] = max(tr.newest[e.Key], e.Fence)
		case safety.KindWriteRejected, safety.KindWriteInfo, safety.KindLost:
			tr.wrote[e.Hold] = true
		case safety.KindDone:
			tr.done[e.Hold] = e
		case safety.KindExit:
			delete(tr.inside, e.Hold)
			tr.exited[e.Hold] = true
		}
	}
}

// quiet reports whether no worker holds a lock or waits in Lock.
func (tr *tracker) quiet() bool {
	tr.update()
	return len(tr.inside) == 0 && len(tr.calling) == 0
}

// insideUnwritten returns a hold of the process's workers that is inside
// the critical section and has not written yet.
func (tr *tracker) insideUnwritten(process string) (safety.Event, bool) {
	tr.update()
	for hold, e := range tr.inside {
		if !tr.wrote[hold] && processOf(e.Worker) == process {
			return e, true
		}
	}
	return safety.Event{}, false
}

// processOf returns the process part of a worker's name.
func processOf(worker string) string {
	for i := range len(worker) {
		if worker[i] == '.' {
			return worker[:i]
		}
	}
	return worker
}
