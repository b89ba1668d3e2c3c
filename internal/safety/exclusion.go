package safety

import (
	"fmt"
	"strings"
	"time"
)

// checkExclusion is C1: a sweep over the enter and exit events of each key
// in the recorder's order. When hold B enters at t while hold A is inside:
//
//   - t before both deadlines: VIOLATION, both claimed the lock at t;
//   - t at or after A's deadline: STALE(A), A overran its validity;
//   - otherwise B entered after its own validity ended: STALE(B).
//
// A STALE hold is expected when its holder was told of the loss, when its
// process was paused, or within a canary; a VIOLATION only within a canary.
//
// The readers of a read/write lock of Options.ReadWrite, whose holds are
// on the key NAME:readers, share the lock NAME with each other: a reader
// overlaps its writers, never another reader.
func checkExclusion(history []Event, ix *historyIndex, options Options, report *Report) {
	type insider struct {
		hold    *hold
		reading bool
	}
	inside := make(map[string]map[string]insider) // resource → holds inside
	for _, e := range history {
		resource, reading := e.Key, false
		if name, found := strings.CutSuffix(e.Key, ReadersKeySuffix); found && options.ReadWrite[name] {
			resource, reading = name, true
		}
		switch e.Kind {
		case KindEnter:
			b := ix.holds[e.Hold]
			if b == nil {
				continue
			}
			holders := inside[resource]
			if holders == nil {
				holders = make(map[string]insider)
				inside[resource] = holders
			}
			for _, a := range holders {
				if !(a.reading && reading) {
					classifyOverlap(ix, report, a.hold, b, e.T)
				}
			}
			holders[b.id] = insider{hold: b, reading: reading}
		case KindExit:
			delete(inside[resource], e.Hold)
		}
	}
}

// ReadersKeySuffix follows the name of a read/write lock in the key of its
// readers' holds, as redlock names it.
const ReadersKeySuffix = ":readers"

// classifyOverlap records what it means that b entered at t while a was
// inside.
func classifyOverlap(ix *historyIndex, report *Report, a, b *hold, t int64) {
	switch {
	case t < a.deadline && t < b.deadline:
		f := Finding{
			Check: CheckExclusion, T: t, Key: b.key, Hold: a.id, Other: b.id,
			Text: fmt.Sprintf("VIOLATION: %s entered while %s was inside; both valid for %v and %v more",
				b.id, a.id, time.Duration(a.deadline-t), time.Duration(b.deadline-t)),
		}
		if name := ix.canaryAt(t, b.key); name != "" {
			f.Expected, f.Canary = ExpectedCanary, name
			report.CanaryViolations[name]++
		}
		report.Violations = append(report.Violations, f)
	case t >= a.deadline:
		markStale(ix, report, a, b, t)
	default:
		markStale(ix, report, b, a, t)
	}
}

// markStale records, once, that hold s was inside after its validity when
// other overlapped it at t.
func markStale(ix *historyIndex, report *Report, s, other *hold, t int64) {
	if s.stale {
		return
	}
	s.stale = true
	f := Finding{
		Check: CheckExclusion, T: t, Key: s.key, Hold: s.id, Other: other.id,
		Text: fmt.Sprintf("STALE: %s was inside %v after its validity ended, when %s entered",
			s.id, time.Duration(t-s.deadline), other.id),
	}
	switch {
	case ix.canaryAt(t, s.key) != "":
		f.Expected, f.Canary = ExpectedCanary, ix.canaryAt(t, s.key)
	case ix.paused(s.worker, s.enter.T, t):
		f.Expected = ExpectedPaused
	case s.lost != 0:
		f.Expected = ExpectedLost
		if s.lost > s.deadline {
			f.Text += fmt.Sprintf("; the loss was signalled %v after the validity ended", time.Duration(s.lost-s.deadline))
		}
	}
	report.Stale = append(report.Stale, f)
}
