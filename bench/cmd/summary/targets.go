package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// A verdict tells whether a target was met.
type verdict int

const (
	verdictUnknown verdict = iota // the results lack a measurement
	verdictMet
	verdictMissed
)

func (v verdict) String() string {
	switch v {
	case verdictMet:
		return "met"
	case verdictMissed:
		return "MISSED"
	default:
		return "not measured"
	}
}

// A target is one requirement of DESIGN.md §3: measure returns what was
// measured, as text, and the verdict.
type target struct {
	name    string
	measure func(r *results) (string, verdict)
}

// targets are the requirements of DESIGN.md §3 that these benchmarks
// measure.
var targets = []target{
	{"0 allocs/op (B/op < 16), serial", zeroAllocations("Serial")},
	{"0 allocs/op (B/op < 16), parallel", zeroAllocations("Parallel")},
	{"0 allocs/op (B/op < 16), contention", zeroAllocations("Contention")},
	{"0 allocs/op (B/op < 16), handoff", zeroAllocations("Handoff")},
	{"0 allocs/op (B/op < 16), handoff pair", zeroAllocations("HandoffPair")},
	{"serial ≤ 1.05 × floor (ns/op)", ratioAtMost("Serial", floorPeer, "ns/op", 1.05, 1, 3, 5)},
	{"parallel N=5 ≤ 0.35 × floor (ns/op)", ratioAtMost("Parallel", floorPeer, "ns/op", 0.35, 5)},
	{"parallel N=5 ≥ 5 × redsync's throughput", speedupAtLeast("Parallel", "redsync", 5, 5)},
	{"parallel N=1 ≤ 0.5 × floor (ns/op)", ratioAtMost("Parallel", floorPeer, "ns/op", 0.5, 1)},
	{"parallel N=1 ≥ 2 × goredis's throughput", speedupAtLeast("Parallel", "goredis", 2, 1)},
	{"handoff N=1 gap ≤ rueidislock's", ratioAtMost("Handoff", "rueidislock", "gap-µs", 1, 1)},
	{"handoff N=5 gap ≤ 3 round trips", gapInRoundTrips(5, 3)},
	{"handoff N=5 gap ≤ 1.2 fan-outs to N=5", gapInFanOuts(5, 1.2)},
	{"handoff N=5 acq/s ≥ 2.5 × redsync's", ratioAtLeast("Handoff", "redsync", "acq/s", 2.5, 5)},
	{"waiting 2 s on a held lock < 50 ms CPU", notMeasured},
	{"100,000 holds: none lost", holdsAtMost("lost", 0)},
	{"100,000 holds: ≤ 1 KiB per hold", holdsAtMost("B/hold", 1024)},
	{"100,000 holds: < 10 % of a core", holdsBelow("core-%", 10)},
	{"100,000 holds: taken in < 5 s", holdsBelow("taken-s", 5)},
}

// holdsScenario is BenchmarkHolds's scenario at 100,000 holds, and
// holdsNodes its number of nodes.
const (
	holdsScenario = "Holds/holds=100000"
	holdsNodes    = 3
)

// holdsAtMost checks lockmux's median in unit at 100,000 holds against
// limit, inclusive.
func holdsAtMost(unit string, limit float64) func(r *results) (string, verdict) {
	return holdsCheck(unit, func(value float64) bool { return value <= limit })
}

// holdsBelow checks lockmux's median in unit at 100,000 holds against
// limit, exclusive.
func holdsBelow(unit string, limit float64) func(r *results) (string, verdict) {
	return holdsCheck(unit, func(value float64) bool { return value < limit })
}

func holdsCheck(unit string, good func(float64) bool) func(r *results) (string, verdict) {
	return func(r *results) (string, verdict) {
		value, ok := r.median(resultKey{scenario: holdsScenario, peer: lockmuxPeer, nodes: holdsNodes}, unit)
		if !ok {
			return "needs LOCKMUX_BENCH_HOLDS=100000", verdictUnknown
		}
		return fmt.Sprintf("%s %s", formatValue(value, true), unit), combine(verdictUnknown, good(value))
	}
}

// writeTargets writes one line per target.
func writeTargets(w io.Writer, r *results) {
	fmt.Fprintln(w, "\nTargets of DESIGN.md §3 for lockmux, from the medians above")
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "target\tmeasured\tresult")
	for _, t := range targets {
		measured, v := t.measure(r)
		if measured == "" {
			measured = "-"
		}
		fmt.Fprintf(table, "%s\t%s\t%s\n", t.name, measured, v)
	}
	table.Flush()
}

// harnessBytes bounds the B/op that the benchmark itself adds, amortized
// over b.N (RunParallel's closures, the first run's setup): the floor, which
// never allocates, shows a few bytes.
const harnessBytes = 16

// zeroAllocations checks lockmux's allocs/op in scenario at every N. The
// testing package truncates allocs/op to a whole number, so an allocation
// every few ops shows as 0 allocs/op with some B/op: B/op must also stay
// below harnessBytes.
func zeroAllocations(scenario string) func(r *results) (string, verdict) {
	return func(r *results) (string, verdict) {
		var parts []string
		v := verdictUnknown
		for _, nodes := range r.nodeCounts(scenario) {
			key := resultKey{scenario: scenario, peer: lockmuxPeer, nodes: nodes}
			allocations, ok := r.median(key, "allocs/op")
			if !ok {
				continue
			}
			bytes, _ := r.median(key, "B/op")
			parts = append(parts, fmt.Sprintf("N=%d: %s (%s B)", nodes, formatValue(allocations, true), formatValue(bytes, true)))
			v = combine(v, allocations == 0 && bytes < harnessBytes)
		}
		return strings.Join(parts, ", "), v
	}
}

// ratioAtMost checks that lockmux's value in unit is at most limit times
// the reference's, at each of nodeCounts.
func ratioAtMost(scenario, reference, unit string, limit float64, nodeCounts ...int) func(r *results) (string, verdict) {
	return func(r *results) (string, verdict) {
		return eachNodeCount(r, nodeCounts, func(nodes int) (float64, bool) {
			return r.ratio(resultKey{scenario: scenario, peer: lockmuxPeer, nodes: nodes}, reference, unit)
		}, func(ratio float64) bool { return ratio <= limit })
	}
}

// ratioAtLeast checks that lockmux's value in unit is at least limit times
// the reference's, at each of nodeCounts.
func ratioAtLeast(scenario, reference, unit string, limit float64, nodeCounts ...int) func(r *results) (string, verdict) {
	return func(r *results) (string, verdict) {
		return eachNodeCount(r, nodeCounts, func(nodes int) (float64, bool) {
			return r.ratio(resultKey{scenario: scenario, peer: lockmuxPeer, nodes: nodes}, reference, unit)
		}, func(ratio float64) bool { return ratio >= limit })
	}
}

// speedupAtLeast checks that the peer's ns/op is at least limit times
// lockmux's: lockmux completes limit times as many cycles per second.
func speedupAtLeast(scenario, peer string, limit float64, nodeCounts ...int) func(r *results) (string, verdict) {
	return func(r *results) (string, verdict) {
		return eachNodeCount(r, nodeCounts, func(nodes int) (float64, bool) {
			return r.ratio(resultKey{scenario: scenario, peer: peer, nodes: nodes}, lockmuxPeer, "ns/op")
		}, func(speedup float64) bool { return speedup >= limit })
	}
}

// gapInRoundTrips checks lockmux's handoff gap at nodes against limit
// round trips, a round trip being half the floor's serial cycle at N=1.
func gapInRoundTrips(nodes int, limit float64) func(r *results) (string, verdict) {
	return func(r *results) (string, verdict) {
		cycle, cycleOK := r.median(resultKey{scenario: "Serial", peer: floorPeer, nodes: 1}, "ns/op")
		gap, gapOK := r.median(resultKey{scenario: "Handoff", peer: lockmuxPeer, nodes: nodes}, "gap-µs")
		if !cycleOK || !gapOK || cycle == 0 {
			return "needs Serial floor N=1 and Handoff lockmux", verdictUnknown
		}
		roundTrips := gap * 1000 / (cycle / 2)
		measured := fmt.Sprintf("N=%d: %.1f (gap %s µs, round trip %s µs)", nodes, roundTrips, formatValue(gap, true), formatValue(cycle/2000, true))
		return measured, combine(verdictUnknown, roundTrips <= limit)
	}
}

// gapInFanOuts checks lockmux's handoff gap at nodes against limit
// fan-outs, a fan-out being half the floor's serial cycle at the same N:
// one round trip to all of its nodes.
func gapInFanOuts(nodes int, limit float64) func(r *results) (string, verdict) {
	return func(r *results) (string, verdict) {
		cycle, cycleOK := r.median(resultKey{scenario: "Serial", peer: floorPeer, nodes: nodes}, "ns/op")
		gap, gapOK := r.median(resultKey{scenario: "Handoff", peer: lockmuxPeer, nodes: nodes}, "gap-µs")
		if !cycleOK || !gapOK || cycle == 0 {
			return fmt.Sprintf("needs Serial floor N=%d and Handoff lockmux", nodes), verdictUnknown
		}
		fanOuts := gap * 1000 / (cycle / 2)
		measured := fmt.Sprintf("N=%d: %.2f (gap %s µs, fan-out %s µs)", nodes, fanOuts, formatValue(gap, true), formatValue(cycle/2000, true))
		return measured, combine(verdictUnknown, fanOuts <= limit)
	}
}

func notMeasured(*results) (string, verdict) {
	return "not measured by these benchmarks", verdictUnknown
}

// eachNodeCount measures at each of nodeCounts and combines the verdicts.
func eachNodeCount(r *results, nodeCounts []int, measure func(nodes int) (float64, bool), good func(float64) bool) (string, verdict) {
	var parts []string
	v := verdictUnknown
	for _, nodes := range nodeCounts {
		value, ok := measure(nodes)
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("N=%d: %.2f", nodes, value))
		v = combine(v, good(value))
	}
	return strings.Join(parts, ", "), v
}

// combine adds one measurement's outcome to a verdict: a target is met
// when every measurement meets it.
func combine(v verdict, good bool) verdict {
	switch {
	case !good:
		return verdictMissed
	case v == verdictUnknown:
		return verdictMet
	default:
		return v
	}
}
