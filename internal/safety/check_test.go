package safety_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/safety"
)

// Every check must fail on a history built to break it: a checker that
// cannot fail proves nothing.

const ms = int64(time.Millisecond)

// builder makes synthetic histories. Stamps are in milliseconds.
type builder struct {
	events []safety.Event
	ttl    int64 // the TTL of the holds in ms; 0 leaves C4's bounds out
}

func (b *builder) add(t int64, e safety.Event) *builder {
	e.T = t * ms
	b.events = append(b.events, e)
	return b
}

// hold adds a whole hold of key: called at call, acquired at call+1 with
// the deadline, inside from enter to exit, released after. Times in ms.
func (b *builder) hold(key, id string, fence, call, enter, exit, deadline int64) *builder {
	worker := id[:len(id)-2]
	b.add(call, safety.Event{Kind: safety.KindAcquireCall, Worker: worker, Key: key, Hold: id, At: call * ms, TTL: b.ttl * ms})
	b.add(call+1, safety.Event{Kind: safety.KindAcquireOK, Worker: worker, Key: key, Hold: id, Fence: fence, Deadline: deadline * ms, At: (call + 1) * ms})
	b.add(enter, safety.Event{Kind: safety.KindEnter, Worker: worker, Key: key, Hold: id, Deadline: deadline * ms})
	b.add(exit, safety.Event{Kind: safety.KindExit, Worker: worker, Key: key, Hold: id, Deadline: deadline * ms})
	return b
}

// history returns the events in stamp order.
func (b *builder) history() []safety.Event {
	events := slices.Clone(b.events)
	slices.SortStableFunc(events, func(x, y safety.Event) int { return int(x.T - y.T) })
	return events
}

func (b *builder) check(options safety.Options) *safety.Report {
	return safety.Check(b.history(), options)
}

func TestExclusionPassesHoldsThatDoNotOverlap(t *testing.T) {
	var b builder
	b.hold("k", "w1.g0#1", 1, 0, 10, 20, 1000)
	b.hold("k", "w2.g0#1", 2, 5, 30, 40, 1030)
	b.hold("other", "w3.g0#1", 1, 0, 12, 35, 1000) // another key may overlap
	report := b.check(safety.Options{})
	assert.NoError(t, report.Err())
	assert.Equal(t, 3, report.Holds)
	assert.Empty(t, report.Violations)
	assert.Empty(t, report.Stale)
}

func TestExclusionFindsAViolation(t *testing.T) {
	var b builder
	b.hold("k", "w1.g0#1", 1, 0, 10, 60, 100)
	b.hold("k", "w2.g0#1", 2, 5, 50, 70, 150)
	report := b.check(safety.Options{})
	require.Len(t, report.Violations, 1)
	assert.Equal(t, safety.CheckExclusion, report.Violations[0].Check)
	assert.Equal(t, 50*ms, report.Violations[0].T)
	assert.Contains(t, report.Violations[0].Text, "VIOLATION")
	assert.Empty(t, report.Violations[0].Expected)
	assert.ErrorContains(t, report.Err(), "VIOLATION")
}

func TestExclusionFindsAStaleHold(t *testing.T) {
	stale := func() *builder {
		var b builder
		b.hold("k", "w1.g0#1", 1, 0, 10, 60, 40) // inside until 60, valid until 40
		b.hold("k", "w2.g0#1", 2, 5, 50, 70, 150)
		return &b
	}
	t.Run("unexplained", func(t *testing.T) {
		report := stale().check(safety.Options{})
		assert.Empty(t, report.Violations)
		require.Len(t, report.Stale, 1)
		assert.Equal(t, "w1.g0#1", report.Stale[0].Hold)
		assert.ErrorContains(t, report.Err(), "STALE")
	})
	t.Run("the holder was told", func(t *testing.T) {
		b := stale()
		b.add(45, safety.Event{Kind: safety.KindLost, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1"})
		report := b.check(safety.Options{})
		require.Len(t, report.Stale, 1)
		assert.Equal(t, safety.ExpectedLost, report.Stale[0].Expected)
		assert.NoError(t, report.Err())
	})
	t.Run("the process was paused", func(t *testing.T) {
		b := stale()
		b.add(20, safety.Event{Kind: safety.KindNemesis, What: "pause", Worker: "w1"})
		b.add(55, safety.Event{Kind: safety.KindHeal, What: "pause", Worker: "w1"})
		report := b.check(safety.Options{})
		require.Len(t, report.Stale, 1)
		assert.Equal(t, safety.ExpectedPaused, report.Stale[0].Expected)
		assert.NoError(t, report.Err())
	})
	t.Run("another process was paused", func(t *testing.T) {
		b := stale()
		b.add(20, safety.Event{Kind: safety.KindNemesis, What: "pause", Worker: "w2"})
		b.add(55, safety.Event{Kind: safety.KindHeal, What: "pause", Worker: "w2"})
		assert.Error(t, b.check(safety.Options{}).Err())
	})
	t.Run("the newcomer entered after its own validity", func(t *testing.T) {
		var b builder
		b.hold("k", "w1.g0#1", 1, 0, 10, 60, 100)
		b.hold("k", "w2.g0#1", 2, 5, 50, 70, 45)
		report := b.check(safety.Options{})
		require.Len(t, report.Stale, 1)
		assert.Equal(t, "w2.g0#1", report.Stale[0].Hold)
		assert.Empty(t, report.Violations)
	})
}

func TestExclusionExpectsViolationsOfCanaries(t *testing.T) {
	var b builder
	b.add(1, safety.Event{Kind: safety.KindCanaryStart, What: "clock-jump#1"})
	b.hold("k", "c1.g0#1", 1, 2, 10, 60, 100)
	b.hold("k", "c2.g0#1", 2, 5, 50, 70, 150)
	b.add(80, safety.Event{Kind: safety.KindCanaryEnd, What: "clock-jump#1"})
	b.add(90, safety.Event{Kind: safety.KindCanaryStart, What: "restart#2"})
	b.add(95, safety.Event{Kind: safety.KindCanaryEnd, What: "restart#2"})
	report := b.check(safety.Options{})
	require.Len(t, report.Violations, 1)
	assert.Equal(t, safety.ExpectedCanary, report.Violations[0].Expected)
	assert.Equal(t, map[string]int{"clock-jump#1": 1, "restart#2": 0}, report.CanaryViolations)
	assert.NoError(t, report.Err())
}

func TestExclusionExcusesOnlyTheCanarysKey(t *testing.T) {
	var b builder
	b.add(1, safety.Event{Kind: safety.KindCanaryStart, What: "clock-jump#1", Key: "canary"})
	b.hold("canary", "c1.g0#1", 1, 2, 10, 60, 100)
	b.hold("canary", "c2.g0#1", 2, 5, 50, 70, 150)
	b.hold("k", "w1.g0#1", 1, 2, 10, 60, 100) // the canary's fault, but another key
	b.hold("k", "w2.g0#1", 2, 5, 50, 70, 150)
	b.add(80, safety.Event{Kind: safety.KindCanaryEnd, What: "clock-jump#1"})
	report := b.check(safety.Options{})
	require.Len(t, report.Violations, 2)
	assert.Equal(t, map[string]int{"clock-jump#1": 1}, report.CanaryViolations)
	require.Len(t, safety.Unexpected(report.Violations), 1)
	assert.Equal(t, "k", safety.Unexpected(report.Violations)[0].Key)
	assert.Error(t, report.Err())
}

func TestExclusionUsesTheLatestValidity(t *testing.T) {
	// The hold was extended: the exit reports a later validity, so the
	// overlap at 50 is a violation, not a stale hold.
	var b builder
	b.hold("k", "w1.g0#1", 1, 0, 10, 60, 40)
	b.events[len(b.events)-1].Deadline = 200 * ms
	b.hold("k", "w2.g0#1", 2, 5, 50, 70, 150)
	report := b.check(safety.Options{})
	assert.Len(t, report.Violations, 1)
	assert.Empty(t, report.Stale)
}

func TestFences(t *testing.T) {
	for _, test := range []struct {
		name     string
		build    func(b *builder)
		problems int
		expected string
	}{
		{name: "increasing", problems: 0, build: func(b *builder) {
			b.hold("k", "w1.g0#1", 5, 0, 2, 3, 1000)
			b.hold("k", "w2.g0#1", 6, 10, 12, 13, 1000)
		}},
		{name: "repeated", problems: 2, build: func(b *builder) { // not above, and taken
			b.hold("k", "w1.g0#1", 5, 0, 2, 3, 1000)
			b.hold("k", "w2.g0#1", 5, 10, 12, 13, 1000)
		}},
		{name: "decreasing", problems: 1, build: func(b *builder) {
			b.hold("k", "w1.g0#1", 5, 0, 2, 3, 1000)
			b.hold("k", "w2.g0#1", 4, 10, 12, 13, 1000)
		}},
		{name: "overlapping calls may return in any order", problems: 0, build: func(b *builder) {
			// w2 was called at 5, before w1 returned at 10: no order between them.
			b.add(0, safety.Event{Kind: safety.KindAcquireCall, Key: "k", Hold: "w1.g0#1"})
			b.add(5, safety.Event{Kind: safety.KindAcquireCall, Key: "k", Hold: "w2.g0#1"})
			b.add(10, safety.Event{Kind: safety.KindAcquireOK, Key: "k", Hold: "w1.g0#1", Fence: 5, Deadline: 1000 * ms})
			b.add(12, safety.Event{Kind: safety.KindAcquireOK, Key: "k", Hold: "w2.g0#1", Fence: 4, Deadline: 1000 * ms})
		}},
		{name: "a call after a return is ordered", problems: 1, build: func(b *builder) {
			b.add(0, safety.Event{Kind: safety.KindAcquireCall, Key: "k", Hold: "w1.g0#1"})
			b.add(10, safety.Event{Kind: safety.KindAcquireOK, Key: "k", Hold: "w1.g0#1", Fence: 5, Deadline: 1000 * ms})
			b.add(11, safety.Event{Kind: safety.KindAcquireCall, Key: "k", Hold: "w2.g0#1"})
			b.add(12, safety.Event{Kind: safety.KindAcquireOK, Key: "k", Hold: "w2.g0#1", Fence: 4, Deadline: 1000 * ms})
		}},
		{name: "other keys have their own fences", problems: 0, build: func(b *builder) {
			b.hold("k", "w1.g0#1", 5, 0, 2, 3, 1000)
			b.hold("j", "w2.g0#1", 1, 10, 12, 13, 1000)
		}},
		{name: "after a node lost its data", problems: 1, expected: safety.ExpectedWipe, build: func(b *builder) {
			b.hold("k", "w1.g0#1", 5, 0, 2, 3, 1000)
			b.add(5, safety.Event{Kind: safety.KindWipe, Node: "C"})
			b.hold("k", "w2.g0#1", 3, 10, 12, 13, 1000)
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			var b builder
			test.build(&b)
			report := b.check(safety.Options{})
			require.Len(t, report.Fences, test.problems, "%v", report.Fences)
			for _, f := range report.Fences {
				assert.Equal(t, safety.CheckFences, f.Check)
				assert.Equal(t, test.expected, f.Expected)
			}
			if test.problems > 0 && test.expected == "" {
				assert.Error(t, report.Err())
			} else {
				assert.NoError(t, report.Err())
			}
		})
	}
}

// writes adds a fenced write result to the hold id.
func (b *builder) write(t int64, kind safety.Kind, key, id string, fence int64) *builder {
	return b.add(t, safety.Event{Kind: kind, Worker: id[:len(id)-2], Key: key, Hold: id, Fence: fence, Element: safety.Element(id, fence)})
}

func TestResource(t *testing.T) {
	a, b2, c := safety.Element("w1.g0#1", 1), safety.Element("w2.g0#1", 2), safety.Element("w3.g0#1", 3)
	base := func() *builder {
		var b builder
		b.hold("k", "w1.g0#1", 1, 0, 2, 10, 1000).write(5, safety.KindWriteOK, "k", "w1.g0#1", 1)
		b.hold("k", "w2.g0#1", 2, 11, 13, 20, 1000).write(15, safety.KindWriteOK, "k", "w2.g0#1", 2)
		b.hold("k", "w3.g0#1", 3, 21, 23, 30, 1000).write(25, safety.KindWriteInfo, "k", "w3.g0#1", 3)
		return &b
	}
	for _, test := range []struct {
		name string
		log  []string
		fail string
	}{
		{name: "complete", log: []string{a, b2, c}},
		{name: "the write of unknown outcome did not happen", log: []string{a, b2}},
		{name: "acknowledged write lost", log: []string{a, c}, fail: "missing from the log"},
		{name: "written twice", log: []string{a, b2, b2}, fail: "2 times"},
		{name: "fences decrease", log: []string{b2, a}, fail: "decrease"},
		{name: "unknown element", log: []string{a, b2, safety.Element("ghost.g0#9", 9)}, fail: "nobody"},
		{name: "not an element", log: []string{a, b2, "garbage"}, fail: "not HOLD/FENCE"},
	} {
		t.Run(test.name, func(t *testing.T) {
			report := base().check(safety.Options{Resource: map[string][]string{"k": test.log}})
			if test.fail == "" {
				assert.NoError(t, report.Err())
				return
			}
			assert.ErrorContains(t, report.Err(), test.fail)
			for _, f := range report.Resource {
				assert.Equal(t, safety.CheckResource, f.Check)
			}
		})
	}
	t.Run("a refused write in the log", func(t *testing.T) {
		b := base()
		b.write(26, safety.KindWriteRejected, "k", "w3.g0#1", 3)
		report := b.check(safety.Options{Resource: map[string][]string{"k": {a, b2, c}}})
		assert.ErrorContains(t, report.Err(), "refused")
	})
}

func TestResourceCountsStaleWritesRefused(t *testing.T) {
	var b builder
	b.hold("k", "w1.g0#1", 1, 0, 10, 80, 40) // stale when the next one enters
	b.hold("k", "w2.g0#1", 2, 5, 50, 70, 150).write(60, safety.KindWriteOK, "k", "w2.g0#1", 2)
	b.write(75, safety.KindWriteRejected, "k", "w1.g0#1", 1)
	b.add(20, safety.Event{Kind: safety.KindNemesis, What: "pause", Worker: "w1"})
	b.add(72, safety.Event{Kind: safety.KindHeal, What: "pause", Worker: "w1"})
	report := b.check(safety.Options{Resource: map[string][]string{"k": {safety.Element("w2.g0#1", 2)}}})
	assert.NoError(t, report.Err())
	assert.Equal(t, 1, report.WritesRejected)
	assert.Equal(t, 1, report.StaleWritesRejected)

	// A refusal that nothing explains: a fence regression C2 missed.
	var c builder
	c.hold("k", "w1.g0#1", 1, 0, 10, 20, 1000).write(15, safety.KindWriteRejected, "k", "w1.g0#1", 1)
	report = c.check(safety.Options{})
	assert.Zero(t, report.StaleWritesRejected)
	assert.ErrorContains(t, report.Err(), "neither stale nor overlapped")
}

func TestTruth(t *testing.T) {
	const ttl = 1000
	// The bound of a validity is TTL − drift: 1000 − 10 − 2 ms.
	for _, test := range []struct {
		name  string
		build func(b *builder)
		fail  string
	}{
		{name: "truthful", build: func(b *builder) {
			b.hold("k", "w1.g0#1", 1, 0, 2, 3, 1+988)
			b.add(1500, safety.Event{Kind: safety.KindExtendCall, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 500 * ms, Deadline: 989 * ms})
			b.add(1501, safety.Event{Kind: safety.KindExtendOK, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 501 * ms, Deadline: 1488 * ms})
			b.add(1600, safety.Event{Kind: safety.KindReleaseCall, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 1400 * ms})
			b.add(1601, safety.Event{Kind: safety.KindReleaseOK, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1"})
		}},
		{name: "acquired with no validity left", fail: "had ended", build: func(b *builder) {
			b.hold("k", "w1.g0#1", 1, 0, 2, 3, -10)
		}},
		{name: "validity longer than TTL − drift", fail: "longer than TTL", build: func(b *builder) {
			b.hold("k", "w1.g0#1", 1, 0, 2, 3, 1+995) // the drift added, not subtracted
		}},
		{name: "extension after the validity", fail: "after the validity ended", build: func(b *builder) {
			b.hold("k", "w1.g0#1", 1, 0, 2, 3, 1+988)
			b.add(1500, safety.Event{Kind: safety.KindExtendCall, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 1000 * ms, Deadline: 989 * ms})
			b.add(1501, safety.Event{Kind: safety.KindExtendOK, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 1001 * ms, Deadline: 1900 * ms})
		}},
		{name: "extension longer than TTL − drift", fail: "longer than TTL", build: func(b *builder) {
			b.hold("k", "w1.g0#1", 1, 0, 2, 3, 1+988)
			b.add(1500, safety.Event{Kind: safety.KindExtendCall, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 500 * ms, Deadline: 989 * ms})
			b.add(1501, safety.Event{Kind: safety.KindExtendOK, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 501 * ms, Deadline: 1500 * ms})
		}},
		{name: "an extension started late is bounded from its start", build: func(b *builder) {
			// The call was stamped at 500 ms; the worker called Extend at
			// 510 ms (a slow round trip to the recorder).
			b.hold("k", "w1.g0#1", 1, 0, 2, 3, 1+988)
			b.add(1500, safety.Event{Kind: safety.KindExtendCall, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 500 * ms, Deadline: 989 * ms})
			b.add(1501, safety.Event{Kind: safety.KindExtendOK, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 511 * ms, Started: 510 * ms, Deadline: 1498 * ms})
		}},
		{name: "extension longer than TTL − drift from its start", fail: "longer than TTL", build: func(b *builder) {
			b.hold("k", "w1.g0#1", 1, 0, 2, 3, 1+988)
			b.add(1500, safety.Event{Kind: safety.KindExtendCall, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 500 * ms, Deadline: 989 * ms})
			b.add(1501, safety.Event{Kind: safety.KindExtendOK, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 511 * ms, Started: 510 * ms, Deadline: 1510 * ms})
		}},
		{name: "release after the validity", fail: "release reported success", build: func(b *builder) {
			b.hold("k", "w1.g0#1", 1, 0, 2, 3, 1+988)
			b.add(1600, safety.Event{Kind: safety.KindReleaseCall, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1", At: 1200 * ms})
			b.add(1601, safety.Event{Kind: safety.KindReleaseOK, Worker: "w1.g0", Key: "k", Hold: "w1.g0#1"})
		}},
		{name: "a pause excuses the clock readings", build: func(b *builder) {
			b.add(0, safety.Event{Kind: safety.KindNemesis, What: "pause", Worker: "w1"})
			b.hold("k", "w1.g0#1", 1, 0, 2, 3, -10)
			b.add(4, safety.Event{Kind: safety.KindHeal, What: "pause", Worker: "w1"})
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			b := builder{ttl: ttl}
			test.build(&b)
			report := b.check(safety.Options{})
			if test.fail == "" {
				assert.NoError(t, report.Err())
				return
			}
			require.NotEmpty(t, report.Truth)
			assert.Equal(t, safety.CheckTruth, report.Truth[0].Check)
			assert.ErrorContains(t, report.Err(), test.fail)
		})
	}
}

func TestLiveness(t *testing.T) {
	second := int64(1000)
	acquisitions := func(stamps ...int64) *builder {
		var b builder
		for i, at := range stamps {
			b.add(at, safety.Event{Kind: safety.KindAcquireOK, Key: "k", Hold: "w.g0#" + string(rune('a'+i))})
		}
		return &b
	}
	options := safety.Options{LivenessKeys: []string{"k"}, LivenessFrom: 0, LivenessTo: 10 * second * ms}
	assert.NoError(t, acquisitions(1*second, 7*second).check(options).Err())
	assert.ErrorContains(t, acquisitions(1*second, 2*second).check(options).Err(), "no acquisition")
	assert.ErrorContains(t, acquisitions(7*second).check(options).Err(), "no acquisition")

	var b builder
	b.add(1, safety.Event{Kind: safety.KindProbe, Key: "k", Latency: int64(50 * time.Millisecond)})
	assert.NoError(t, b.check(safety.Options{ProbeLimit: 100 * time.Millisecond}).Err())
	assert.ErrorContains(t, b.check(safety.Options{ProbeLimit: 10 * time.Millisecond}).Err(), "probe took")
	b.add(2, safety.Event{Kind: safety.KindProbe, Key: "k", Err: "redlock: lock not acquired"})
	assert.ErrorContains(t, b.check(safety.Options{}).Err(), "probe failed")
}

func TestReportErrNamesAtMostTwentyFindings(t *testing.T) {
	var b builder
	for i := range 30 {
		b.hold("k", "w1.g0#"+string(rune('A'+i)), 0, int64(10*i), int64(10*i+2), 1000, 2000)
	}
	report := b.check(safety.Options{})
	assert.Len(t, report.Violations, 29*30/2)
	assert.ErrorContains(t, report.Err(), "and 415 more findings")
}

// C7 counts the holders of a semaphore's permits that claim to be valid
// at once: as many as its limit pass, one more is a VIOLATION, and a hold
// inside after its validity does not count.
func TestSemaphores(t *testing.T) {
	options := safety.Options{Semaphores: map[string]int{"sem": 2}}
	var within builder
	within.hold("sem:permit:0", "w1.g0#1", 1, 0, 10, 50, 1000)
	within.hold("sem:permit:1", "w2.g0#1", 1, 0, 20, 60, 1000)
	within.hold("sem:permit:0", "w3.g0#1", 2, 55, 70, 80, 1100) // after w1 left
	within.hold("other:permit:0", "w4.g0#1", 1, 0, 30, 40, 1000)
	report := within.check(options)
	assert.NoError(t, report.Err())
	assert.Empty(t, report.Semaphores)

	var over builder
	over.hold("sem:permit:0", "w1.g0#1", 1, 0, 10, 50, 1000)
	over.hold("sem:permit:1", "w2.g0#1", 1, 0, 20, 60, 1000)
	over.hold("sem:permit:2", "w3.g0#1", 1, 0, 30, 40, 1000) // a third slot: a client with a larger limit
	report = over.check(options)
	require.Len(t, report.Semaphores, 1)
	assert.Equal(t, safety.CheckSemaphore, report.Semaphores[0].Check)
	assert.Contains(t, report.Semaphores[0].Text, "VIOLATION: 3 holders of the semaphore sem (limit 2)")
	assert.Error(t, report.Err())

	var stale builder
	stale.hold("sem:permit:0", "w1.g0#1", 1, 0, 10, 50, 25) // its validity ended at 25
	stale.hold("sem:permit:1", "w2.g0#1", 1, 0, 20, 60, 1000)
	stale.hold("sem:permit:2", "w3.g0#1", 1, 0, 30, 40, 1000)
	assert.Empty(t, stale.check(options).Semaphores, "a hold past its validity does not count")
}

// A permit's acquisition is called on its semaphore and returns on the
// permit's key: C2 compares its fence with the fences of that key returned
// before the call.
func TestFencesOfPermits(t *testing.T) {
	var b builder
	b.add(0, safety.Event{Kind: safety.KindAcquireCall, Worker: "w1.g0", Key: "sem", Hold: "w1.g0#1"})
	b.add(1, safety.Event{Kind: safety.KindAcquireOK, Worker: "w1.g0", Key: "sem:permit:0", Hold: "w1.g0#1", Fence: 5, Deadline: 1000 * ms})
	b.add(10, safety.Event{Kind: safety.KindAcquireCall, Worker: "w2.g0", Key: "sem", Hold: "w2.g0#1"})
	b.add(11, safety.Event{Kind: safety.KindAcquireOK, Worker: "w2.g0", Key: "sem:permit:0", Hold: "w2.g0#1", Fence: 3, Deadline: 1000 * ms})
	b.add(12, safety.Event{Kind: safety.KindAcquireCall, Worker: "w3.g0", Key: "sem", Hold: "w3.g0#1"})
	b.add(13, safety.Event{Kind: safety.KindAcquireOK, Worker: "w3.g0", Key: "sem:permit:1", Hold: "w3.g0#1", Fence: 1, Deadline: 1000 * ms})
	report := b.check(safety.Options{})
	require.Len(t, report.Fences, 1, "%v", report.Fences)
	assert.Equal(t, "w2.g0#1", report.Fences[0].Hold)
	assert.Contains(t, report.Fences[0].Text, "fence 3 is not above 5 of w1.g0#1")
}

// The readers of a read/write lock overlap each other freely; a writer
// that overlaps a reader, or another writer, is a VIOLATION.
func TestExclusionOfReadersAndWriters(t *testing.T) {
	options := safety.Options{ReadWrite: map[string]bool{"rw": true}}
	var readers builder
	readers.hold("rw:readers", "w1.g0#1", 0, 0, 10, 50, 1000)
	readers.hold("rw:readers", "w2.g0#1", 0, 0, 20, 60, 1000)
	readers.hold("rw", "w3.g0#1", 1, 55, 70, 80, 1100) // after the readers left
	assert.NoError(t, readers.check(options).Err())

	var writerAmongReaders builder
	writerAmongReaders.hold("rw:readers", "w1.g0#1", 0, 0, 10, 50, 1000)
	writerAmongReaders.hold("rw", "w2.g0#1", 1, 0, 20, 30, 1000)
	report := writerAmongReaders.check(options)
	require.Len(t, report.Violations, 1)
	assert.Contains(t, report.Violations[0].Text, "w2.g0#1 entered while w1.g0#1 was inside")

	var readerUnderWriter builder
	readerUnderWriter.hold("rw", "w1.g0#1", 1, 0, 10, 50, 1000)
	readerUnderWriter.hold("rw:readers", "w2.g0#1", 0, 0, 20, 30, 1000)
	require.Len(t, readerUnderWriter.check(options).Violations, 1)

	var notDeclared builder // without ReadWrite, a key of readers is a key like any other
	notDeclared.hold("rw:readers", "w1.g0#1", 0, 0, 10, 50, 1000)
	notDeclared.hold("rw:readers", "w2.g0#1", 0, 0, 20, 60, 1000)
	assert.Len(t, notDeclared.check(safety.Options{}).Violations, 1)
}

// A fault counts once it began and healed; a required fault that only
// began, or never did, fails the run by name.
func TestFaultsCountedAndRequired(t *testing.T) {
	var b builder
	b.hold("k", "w1.g0#1", 1, 0, 10, 20, 1000)
	b.add(30, safety.Event{Kind: safety.KindNemesis, What: "F25 slot moved (slot 7 of k)", Node: "cluster"})
	b.add(40, safety.Event{Kind: safety.KindHeal, What: "F25 slot moved (slot 7 of k)", Node: "cluster"})
	b.add(50, safety.Event{Kind: safety.KindNemesis, What: "F36 cluster master crashed"})
	report := b.check(safety.Options{RequiredFaults: []string{"F25 slot moved"}})
	require.NoError(t, report.Err())
	assert.Equal(t, map[string]int{"F25 slot moved": 1}, report.Faults, "a fault that never healed is not counted")

	report = b.check(safety.Options{RequiredFaults: []string{"F25 slot moved", "F36 cluster master crashed", "F1 kill -9"}})
	assert.Equal(t, []string{"F36 cluster master crashed", "F1 kill -9"}, report.MissingFaults)
	assert.ErrorContains(t, report.Err(), "F36 cluster master crashed; F1 kill -9")
}
