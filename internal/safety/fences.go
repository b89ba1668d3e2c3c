package safety

import (
	"cmp"
	"fmt"
	"slices"
)

// checkFences is C2: for two holds X and Y of one key, if X's acquisition
// returned before Y's was called, X's fence is smaller; and no two holds
// of a key share a fence. Holds without a fence are skipped. A regression
// is expected within a canary, or when a node lost its data between the
// two acquisitions: the fencing counters are only as durable as the nodes.
func checkFences(history []Event, ix *historyIndex, report *Report) {
	type newest struct {
		fence int64
		hold  string
		at    int64 // stamp of its KindAcquireOK
	}
	// returned lists, per key, the largest fence returned so far after
	// each acquisition that raised it, in stamp order. A hold's key is
	// known once acquired (a semaphore's call names the semaphore, its
	// acquisition the permit), so each acquisition looks up the largest
	// fence of its key returned before its call.
	returned := make(map[string][]newest)
	calledAt := make(map[string]int64)         // hold → stamp of its KindAcquireCall
	owners := make(map[string]map[int64]Event) // key → fence → its KindAcquireOK
	for _, e := range history {
		switch e.Kind {
		case KindAcquireCall:
			calledAt[e.Hold] = e.T
		case KindAcquireOK:
			if e.Fence == 0 {
				continue
			}
			var before newest
			raised := returned[e.Key]
			if i, _ := slices.BinarySearchFunc(raised, calledAt[e.Hold], func(n newest, t int64) int { return cmp.Compare(n.at, t) }); i > 0 {
				before = raised[i-1]
			}
			if e.Fence <= before.fence {
				report.Fences = append(report.Fences, fenceFinding(ix, e, before.hold, before.at,
					fmt.Sprintf("fence %d is not above %d of %s, which returned before this acquisition was called", e.Fence, before.fence, before.hold)))
			}
			if owners[e.Key] == nil {
				owners[e.Key] = make(map[int64]Event)
			}
			if first, taken := owners[e.Key][e.Fence]; taken {
				report.Fences = append(report.Fences, fenceFinding(ix, e, first.Hold, first.T,
					fmt.Sprintf("fence %d was already given to %s", e.Fence, first.Hold)))
			} else {
				owners[e.Key][e.Fence] = e
			}
			if len(raised) == 0 || e.Fence > raised[len(raised)-1].fence {
				returned[e.Key] = append(raised, newest{fence: e.Fence, hold: e.Hold, at: e.T})
			}
		}
	}
}

// fenceFinding builds a C2 finding about acquisition e and an earlier hold
// acquired at stamp otherAt.
func fenceFinding(ix *historyIndex, e Event, other string, otherAt int64, text string) Finding {
	f := Finding{Check: CheckFences, T: e.T, Key: e.Key, Hold: e.Hold, Other: other, Text: text}
	switch {
	case ix.canaryAt(e.T, e.Key) != "":
		f.Expected, f.Canary = ExpectedCanary, ix.canaryAt(e.T, e.Key)
	case ix.canaryAt(otherAt, e.Key) != "":
		f.Expected, f.Canary = ExpectedCanary, ix.canaryAt(otherAt, e.Key)
	case ix.wipedBetween(otherAt, e.T):
		f.Expected = ExpectedWipe
	}
	return f
}
