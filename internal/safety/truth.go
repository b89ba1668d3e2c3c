package safety

import (
	"fmt"
	"time"
)

// checkTruth is C4: what the library reported as success must have been
// true when it said so.
//
//   - An acquisition returns a validity that has not ended (node-redlock
//     #296, etcd #11456) and that ends no later than TTL − drift after it
//     returned (redlock-py PR #3).
//   - An extension is called before the validity it extends ends, and its
//     new validity ends no later than TTL − drift after the call (redsync
//     PR #71, redlock-rb #36).
//   - A release that reports success was called before the validity
//     ended (redsync PR #143).
//
// Steps during which the worker's process was paused are skipped: the
// worker's clock readings then lie far from the library's.
func checkTruth(ix *historyIndex, options Options, report *Report) {
	tolerance := int64(options.Tolerance)
	add := func(h *hold, t int64, format string, args ...any) {
		report.Truth = append(report.Truth, Finding{Check: CheckTruth, T: t, Key: h.key, Hold: h.id,
			Text: fmt.Sprintf(format, args...)})
	}
	for _, h := range ix.order {
		longest := int64(-1) // the largest validity a call may yield: TTL − drift
		if h.ttl > 0 {
			longest = h.ttl - int64(float64(h.ttl)*options.DriftFactor) - int64(driftConstant)
		}
		call, ok := h.acquireCall, h.acquireOK
		if ok.Kind != "" && call.Kind != "" && !ix.paused(h.worker, call.T, ok.T) {
			if ok.At-ok.Deadline > tolerance {
				add(h, ok.T, "acquisition returned a validity that had ended %v before", time.Duration(ok.At-ok.Deadline))
			}
			// Lock retries, and a validity is measured from the start of
			// the attempt that won, not from the call: the bound is TTL −
			// drift from the return, which every attempt started before.
			if longest >= 0 && ok.Deadline-(ok.At+longest) > tolerance {
				add(h, ok.T, "acquisition claims a validity %v longer than TTL − drift from its return", time.Duration(ok.Deadline-ok.At-longest))
			}
		}
		for _, x := range h.extensions {
			if x.result.Kind != KindExtendOK || ix.paused(h.worker, x.call.T, x.result.T) {
				continue
			}
			if x.call.At-x.call.Deadline > tolerance {
				add(h, x.result.T, "extension succeeded though called %v after the validity ended", time.Duration(x.call.At-x.call.Deadline))
			}
			// The new validity is measured from the extension's start: the
			// latest reading before the call bounds it best.
			started := x.call.At
			if x.result.Started > started {
				started = x.result.Started
			}
			if longest >= 0 && x.result.Deadline-(started+longest) > tolerance {
				add(h, x.result.T, "extension claims a validity %v longer than TTL − drift from its call", time.Duration(x.result.Deadline-started-longest))
			}
			if x.result.At-x.result.Deadline > tolerance {
				add(h, x.result.T, "extension returned a validity that had ended %v before", time.Duration(x.result.At-x.result.Deadline))
			}
		}
		if h.releaseOK && h.releaseCall.Kind != "" && h.releaseCall.At-h.deadline > tolerance {
			add(h, h.releaseCall.T, "release reported success though called %v after the validity ended", time.Duration(h.releaseCall.At-h.deadline))
		}
	}
}
