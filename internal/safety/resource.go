package safety

import (
	"fmt"
	"strconv"
	"strings"
)

// Element returns what the fenced write of a hold appends to the
// resource's log: the hold's name and its fence, "HOLD/FENCE".
func Element(hold string, fence int64) string {
	return hold + "/" + strconv.FormatInt(fence, 10)
}

// parseElement splits an element made by Element.
func parseElement(element string) (hold string, fence int64, ok bool) {
	i := strings.LastIndexByte(element, '/')
	if i < 0 {
		return "", 0, false
	}
	fence, err := strconv.ParseInt(element[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return element[:i], fence, true
}

// checkResource is C3, the set-full check of Jepsen on the fenced
// resource: every acknowledged write is in the log exactly once, no
// refused write is, a write of unknown outcome at most once, nothing else
// is, and the fences of a key's log never decrease. It also counts the
// refused writes, and those of STALE holds.
func checkResource(history []Event, ix *historyIndex, options Options, report *Report) {
	writes := make(map[string]Event) // element → the write's result
	for _, e := range history {
		switch e.Kind {
		case KindWriteOK, KindWriteRejected, KindWriteInfo:
			writes[e.Element] = e
		}
		if e.Kind != KindWriteRejected {
			continue
		}
		report.WritesRejected++
		h := ix.holds[e.Hold]
		switch {
		case h == nil:
		case h.stale:
			report.StaleWritesRejected++
		default:
			f := Finding{Check: CheckResource, T: e.T, Key: e.Key, Hold: e.Hold,
				Text: fmt.Sprintf("the resource refused fence %d (newest %d) of a hold that C1 found neither stale nor overlapped", e.Fence, e.Newest)}
			expectResource(ix, &f, 0, e.T)
			report.Resource = append(report.Resource, f)
		}
	}
	if options.Resource == nil {
		return
	}
	for key, log := range options.Resource {
		counts := make(map[string]int)
		var previous Event
		for i, element := range log {
			counts[element]++
			_, fence, ok := parseElement(element)
			w, known := writes[element]
			switch {
			case !ok:
				report.Resource = append(report.Resource, Finding{Check: CheckResource, Key: key,
					Text: fmt.Sprintf("element %d %q of the log is not HOLD/FENCE", i, element)})
				continue
			case !known:
				report.Resource = append(report.Resource, Finding{Check: CheckResource, Key: key,
					Text: fmt.Sprintf("element %d %q of the log was written by nobody the history knows", i, element)})
			case w.Kind == KindWriteRejected:
				report.Resource = append(report.Resource, Finding{Check: CheckResource, T: w.T, Key: key, Hold: w.Hold,
					Text: fmt.Sprintf("element %d %q is in the log, but its write was refused", i, element)})
			}
			if previous.Element != "" && fence < previous.Fence {
				f := Finding{Check: CheckResource, T: w.T, Key: key, Hold: w.Hold, Other: previous.Hold,
					Text: fmt.Sprintf("the log's fences decrease: %q after %q", element, previous.Element)}
				expectResource(ix, &f, previous.T, w.T)
				report.Resource = append(report.Resource, f)
			}
			previous = Event{T: w.T, Hold: w.Hold, Element: element, Fence: fence}
		}
		for element, n := range counts {
			if n > 1 {
				report.Resource = append(report.Resource, Finding{Check: CheckResource, Key: key,
					Text: fmt.Sprintf("element %q is in the log %d times", element, n)})
			}
		}
		for element, w := range writes {
			if w.Key == key && w.Kind == KindWriteOK && counts[element] == 0 {
				report.Resource = append(report.Resource, Finding{Check: CheckResource, T: w.T, Key: key, Hold: w.Hold,
					Text: fmt.Sprintf("the acknowledged write %q is missing from the log", element)})
			}
		}
	}
}

// expectResource marks a C3 finding about writes at stamps from and to as
// expected when a canary or a wipe explains it.
func expectResource(ix *historyIndex, f *Finding, from, to int64) {
	switch {
	case ix.canaryAt(to, f.Key) != "":
		f.Expected, f.Canary = ExpectedCanary, ix.canaryAt(to, f.Key)
	case from != 0 && ix.canaryAt(from, f.Key) != "":
		f.Expected, f.Canary = ExpectedCanary, ix.canaryAt(from, f.Key)
	case ix.wipedBetween(0, to):
		f.Expected = ExpectedWipe
	}
}
