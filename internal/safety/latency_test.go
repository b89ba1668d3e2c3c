//go:build linux

package safety_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/latency"
	"github.com/lockmux/lockmux/internal/safety"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
)

// attemptWindow says which attempts a latencyObserver is collecting.
type attemptWindow int

const (
	// windowFirstContact: the workers are making their first contact
	// with the nodes (dials, handshakes, epoch markers).
	windowFirstContact attemptWindow = iota
	// windowSteady: every worker has made its first contact, and no fault
	// is injected: the attempts C5 (c) bounds.
	windowSteady
	// windowOff: the faults have begun.
	windowOff
)

// attemptSample is one acquisition attempt, as the observer saw it.
type attemptSample struct {
	elapsed time.Duration
	at      time.Duration // when it ended, from the start of its window
	key     string
	attempt int // the attempt's number in its Lock call
	got     int // the nodes that confirmed
	err     string
}

func (s attemptSample) String() string {
	text := fmt.Sprintf("%v, ended at %v: %s attempt %d, %d nodes confirmed", s.elapsed, s.at.Round(time.Millisecond), s.key, s.attempt, s.got)
	if s.err != "" {
		text += ": " + s.err
	}
	return text
}

// latencyObserver keeps the acquisition attempts of the in-process
// clients without faults, for C5 (c): those of the first contact apart
// from those in steady state.
type latencyObserver struct {
	redlock.NopObserver
	mu           sync.Mutex
	window       attemptWindow
	windowStart  time.Time
	firstContact []attemptSample
	steady       []attemptSample
}

func (o *latencyObserver) OnAcquire(e redlock.AcquireEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.windowStart.IsZero() {
		o.windowStart = time.Now()
	}
	sample := attemptSample{elapsed: e.Elapsed, at: time.Since(o.windowStart), key: e.Key, attempt: e.Attempt, got: e.Got}
	if e.Err != nil {
		sample.err = errorText(e.Err)
	}
	switch o.window {
	case windowFirstContact:
		o.firstContact = append(o.firstContact, sample)
	case windowSteady:
		o.steady = append(o.steady, sample)
	}
}

// collect moves the observer to window.
func (o *latencyObserver) collect(window attemptWindow) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.window, o.windowStart = window, time.Now()
}

// latencies returns the latencies of the attempts of window, and the
// slowest attempts first, at most slowest of them.
func (o *latencyObserver) latencies(window attemptWindow, slowest int) ([]time.Duration, []attemptSample) {
	o.mu.Lock()
	samples := slices.Clone(o.steady)
	if window == windowFirstContact {
		samples = slices.Clone(o.firstContact)
	}
	o.mu.Unlock()
	slices.SortFunc(samples, func(a, b attemptSample) int { return int(b.elapsed - a.elapsed) })
	latencies := make([]time.Duration, len(samples))
	for i, s := range samples {
		latencies[i] = s.elapsed
	}
	return latencies, samples[:min(slowest, len(samples))]
}

// summaryOf returns the latency summary of durations.
func summaryOf(durations []time.Duration) latency.Summary {
	var histogram latency.Histogram
	for _, d := range durations {
		histogram.Record(d)
	}
	return histogram.Summary()
}

// slowestText lists samples, one a line.
func slowestText(samples []attemptSample) string {
	lines := make([]string, len(samples))
	for i, s := range samples {
		lines[i] = "  " + s.String()
	}
	return strings.Join(lines, "\n")
}

// firstContactWaiter follows a recorder until each of the workers has
// ended one acquisition, successful or not: each client has then dialled
// the nodes it reached, and read their epoch markers.
type firstContactWaiter struct {
	rec     *safety.Recorder
	next    int
	workers map[string]bool
}

// done reports whether count workers have each ended an acquisition.
func (w *firstContactWaiter) done(count int) bool {
	events := w.rec.Events(w.next)
	w.next += len(events)
	for _, e := range events {
		switch e.Kind {
		case safety.KindAcquireOK, safety.KindAcquireFail, safety.KindAcquireInfo:
			w.workers[e.Worker] = true
		}
	}
	return len(w.workers) >= count
}

// waitFirstContact waits, at most timeout, until count workers have each
// ended an acquisition, and reports whether they have.
func waitFirstContact(rec *safety.Recorder, count int, timeout time.Duration) bool {
	w := &firstContactWaiter{rec: rec, workers: map[string]bool{}}
	for end := time.Now().Add(timeout); !w.done(count); {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// roundTripFloor measures, alongside the workers' attempts in steady
// state, what the machine charges for the round trips of an attempt
// without the library's work: two rounds of PING to every node, through
// proxies of its own in the same process as the workers' proxies, each
// round decided by a quorum of replies, as a fenced acquisition is. When
// the attempts are slow and the floor is as slow, the machine was.
type roundTripFloor struct {
	group   *mux.Group
	need    int
	stop    chan struct{}
	done    chan struct{}
	samples []time.Duration // written by the measuring goroutine until done is closed
}

// quorumTally decides a round once need servers have replied.
type quorumTally struct{ replied, need int }

func (q *quorumTally) Count(node int, round *mux.Round) bool {
	if round.Err(node) == nil {
		q.replied++
	}
	return q.replied >= q.need
}

// startRoundTripFloor connects to addresses and measures until stopped.
func startRoundTripFloor(t testing.TB, addresses []string) *roundTripFloor {
	group, err := mux.New(addresses, mux.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, err := range group.Connect(ctx) {
		require.NoError(t, err, "round-trip floor: node %d", i)
	}
	f := &roundTripFloor{group: group, need: len(addresses)/2 + 1, stop: make(chan struct{}), done: make(chan struct{})}
	go f.measure()
	return f
}

func (f *roundTripFloor) measure() {
	defer close(f.done)
	round := f.group.NewRound()
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-ticker.C:
		}
		start := time.Now()
		for range 2 {
			round.SetCommand("PING")
			f.group.Send(round, time.Now().Add(time.Second))
			f.group.Wait(context.Background(), round, &quorumTally{need: f.need})
		}
		f.samples = append(f.samples, time.Since(start))
	}
}

// finish stops the measure, closes the connections and returns the
// latencies measured.
func (f *roundTripFloor) finish() []time.Duration {
	close(f.stop)
	<-f.done
	f.group.Close()
	return f.samples
}

// checkAttemptLatency is C5 (c): the p99 of the attempts in steady state
// without faults, less the p99 of the round-trip floor measured alongside,
// is below limit. Other work on the machine's two cores stalls the
// workers' round trips and the floor's alike (runs under load saw both
// stall 80–140 ms at the same moments): the limit is on what the library
// adds. The first contact's attempts are reported apart; firstContact is
// how long the workers took to each end an acquisition.
func checkAttemptLatency(t *testing.T, observer *latencyObserver, floor []time.Duration, firstContact, limit time.Duration) {
	contacts, contactSlowest := observer.latencies(windowFirstContact, 1)
	if len(contactSlowest) > 0 {
		t.Logf("C5: first contact: every worker ended an acquisition %v after the workers started; %d attempts in the meantime, p50 %v, the slowest %s",
			firstContact.Round(time.Millisecond), len(contacts), summaryOf(contacts).P50, contactSlowest[0])
	}
	latencies, slowest := observer.latencies(windowSteady, 10)
	attempts, floorSummary := summaryOf(latencies), summaryOf(floor)
	p99, floorP99 := attempts.P99, floorSummary.P99
	t.Logf("C5: p99 of %d acquisition attempts in steady state without faults: %v (p50 %v, max %v)",
		len(latencies), p99, attempts.P50, attempts.Maximum)
	t.Logf("C5: meanwhile, p99 of %d pairs of PING rounds to a quorum (the floor): %v (p50 %v, max %v)", len(floor),
		floorP99, floorSummary.P50, floorSummary.Maximum)
	if !assert.Less(t, p99-floorP99, limit, "C5: p99 acquisition attempt latency in steady state without faults (%v), less the floor's p99 (%v)", p99, floorP99) {
		t.Logf("C5: the slowest attempts in steady state:\n%s", slowestText(slowest))
	}
}
