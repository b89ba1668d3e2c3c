package manyholds

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/internal/latency"
	"github.com/lockmux/lockmux/redlock"
)

// watch is the Client's Observer: it times each hold's renewals against
// their schedule and counts the renewals and the losses. It allocates
// nothing per event, so that what it costs does not count as the holds'.
type watch struct {
	redlock.NopObserver
	base   time.Time
	period time.Duration // a third of the TTL: the renewals' interval
	prefix int           // the length of the keys' prefix
	// last is, per hold, when its last successful extension or its
	// acquisition ended, in nanoseconds since base; -1 when unknown.
	last     []atomic.Int64
	counting atomic.Bool // renewals count while the holds are kept
	renewals atomic.Uint64
	failed   atomic.Uint64
	lost     atomic.Int64
	lateness latency.Histogram
}

func newWatch(holds int, period time.Duration, prefix int) *watch {
	return &watch{base: time.Now(), period: period, prefix: prefix, last: make([]atomic.Int64, holds)}
}

// taken records that hold i was acquired now.
func (w *watch) taken(i int) { w.last[i].Store(int64(time.Since(w.base))) }

// OnExtend times an automatic extension against its schedule.
func (w *watch) OnExtend(event redlock.ExtendEvent) {
	if !event.Automatic {
		return
	}
	i, err := strconv.Atoi(event.Key[min(w.prefix, len(event.Key)):])
	if err != nil || i < 0 || i >= len(w.last) {
		return
	}
	now := int64(time.Since(w.base))
	previous := w.last[i].Load()
	if event.Err != nil {
		w.last[i].Store(-1) // a retry follows, on another schedule
	} else {
		w.last[i].Store(now)
	}
	if !w.counting.Load() {
		return
	}
	w.renewals.Add(1)
	if event.Err != nil {
		w.failed.Add(1)
	}
	if previous < 0 {
		return
	}
	w.lateness.Record(time.Duration(now - int64(event.Elapsed) - previous - int64(w.period)))
}

// OnLost counts a lost hold.
func (w *watch) OnLost(redlock.LostEvent) { w.lost.Add(1) }
