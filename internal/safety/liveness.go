package safety

import (
	"fmt"
	"slices"
	"time"
)

// checkLiveness is C5: (a) every liveness probe acquired its key, within
// Options.ProbeLimit when set; (b) every key was acquired at least once in
// every full window of Options.LivenessWindow within [LivenessFrom,
// LivenessTo). The latency bound (c) is the caller's, on the durations it
// measured (see internal/latency).
func checkLiveness(history []Event, options Options, report *Report) {
	acquired := make(map[string][]int64)
	for _, e := range history {
		switch e.Kind {
		case KindAcquireOK:
			acquired[e.Key] = append(acquired[e.Key], e.T)
		case KindProbe:
			switch {
			case e.Err != "":
				report.Liveness = append(report.Liveness, Finding{Check: CheckLiveness, T: e.T, Key: e.Key,
					Text: "probe failed after " + time.Duration(e.Latency).String() + ": " + e.Err})
			case options.ProbeLimit > 0 && e.Latency > int64(options.ProbeLimit):
				report.Liveness = append(report.Liveness, Finding{Check: CheckLiveness, T: e.T, Key: e.Key,
					Text: fmt.Sprintf("probe took %v, limit %v", time.Duration(e.Latency), options.ProbeLimit)})
			}
		}
	}
	window := int64(options.LivenessWindow)
	if len(options.LivenessKeys) == 0 || window <= 0 {
		return
	}
	for start := options.LivenessFrom; start+window <= options.LivenessTo; start += window {
		for _, key := range options.LivenessKeys {
			stamps := acquired[key]
			i, _ := slices.BinarySearch(stamps, start)
			if i == len(stamps) || stamps[i] >= start+window {
				report.Liveness = append(report.Liveness, Finding{Check: CheckLiveness, T: start, Key: key,
					Text: fmt.Sprintf("no acquisition in the window of %v from t=%d", options.LivenessWindow, start)})
			}
		}
	}
}
