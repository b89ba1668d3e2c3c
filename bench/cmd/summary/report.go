package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// The two references every peer is compared with.
const (
	floorPeer   = "floor"
	lockmuxPeer = "lockmux"
)

// A metric is a unit whose ratios the report shows.
type metric struct {
	unit         string
	higherBetter bool
}

// headlineMetrics returns the metrics a scenario is judged by: acquisitions
// per second, the handoff gap and the memory per hold where reported, else
// time per op.
func headlineMetrics(r *results, scenario string) []metric {
	var metrics []metric
	if r.has(scenario, "acq/s") {
		metrics = append(metrics, metric{unit: "acq/s", higherBetter: true})
	}
	if r.has(scenario, "gap-µs") {
		metrics = append(metrics, metric{unit: "gap-µs"})
	}
	if r.has(scenario, "B/hold") {
		metrics = append(metrics, metric{unit: "B/hold"})
	}
	if len(metrics) == 0 {
		metrics = append(metrics, metric{unit: "ns/op"})
	}
	return metrics
}

// otherUnits are shown after the headline metrics, without ratios; the
// last ones are BenchmarkHolds's.
var otherUnits = []string{"ns/op", "allocs/op", "B/op", "goroutines/op", "cpu-ns/op",
	"taken-s", "B/hold", "core-%", "cmd/renewal", "node-cmd/renewal", "late-p99-ms", "lost"}

// writeScenario writes one table: a row per peer and N, the headline
// metrics with their ratios to each reference present, then the other
// units.
func writeScenario(w io.Writer, r *results, scenario string) {
	headline := headlineMetrics(r, scenario)
	var references []string
	for _, reference := range []string{floorPeer, lockmuxPeer} {
		if r.hasPeer(scenario, reference) {
			references = append(references, reference)
		}
	}
	var description []string
	for _, m := range headline {
		direction := "lower"
		if m.higherBetter {
			direction = "higher"
		}
		description = append(description, fmt.Sprintf("%s (%s is better)", m.unit, direction))
	}
	fmt.Fprintf(w, "\n%s: %s; medians, ratio = peer ÷ reference at the same N\n", scenario, strings.Join(description, ", "))

	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"N", "peer"}
	for _, m := range headline {
		header = append(header, m.unit)
		for _, reference := range references {
			header = append(header, "÷"+reference)
		}
	}
	for _, unit := range otherUnits {
		if !isHeadline(headline, unit) && r.has(scenario, unit) {
			header = append(header, unit)
		}
	}
	header = append(header, "runs")
	fmt.Fprintln(table, strings.Join(header, "\t")+"\t")

	for _, nodes := range r.nodeCounts(scenario) {
		for _, peer := range r.peers {
			key := resultKey{scenario: scenario, peer: peer, nodes: nodes}
			if r.runs(key) == 0 {
				continue
			}
			row := []string{fmt.Sprint(nodes), peer}
			for _, m := range headline {
				value, ok := r.median(key, m.unit)
				row = append(row, formatValue(value, ok))
				for _, reference := range references {
					row = append(row, formatRatio(r.ratio(key, reference, m.unit)))
				}
			}
			for _, unit := range otherUnits {
				if !isHeadline(headline, unit) && r.has(scenario, unit) {
					row = append(row, formatValue(r.median(key, unit)))
				}
			}
			row = append(row, fmt.Sprint(r.runs(key)))
			fmt.Fprintln(table, strings.Join(row, "\t")+"\t")
		}
	}
	table.Flush()
}

// ratio returns key's median in unit divided by the reference peer's at
// the same scenario and N.
func (r *results) ratio(key resultKey, reference, unit string) (float64, bool) {
	value, ok := r.median(key, unit)
	referenceKey := resultKey{scenario: key.scenario, peer: reference, nodes: key.nodes}
	referenceValue, referenceOK := r.median(referenceKey, unit)
	if !ok || !referenceOK || referenceValue == 0 {
		return 0, false
	}
	return value / referenceValue, true
}

// hasPeer reports whether peer has results in scenario.
func (r *results) hasPeer(scenario, peer string) bool {
	for key := range r.values {
		if key.scenario == scenario && key.peer == peer {
			return true
		}
	}
	return false
}

func isHeadline(headline []metric, unit string) bool {
	for _, m := range headline {
		if m.unit == unit {
			return true
		}
	}
	return false
}

// formatValue writes a measurement with three significant digits or as a
// whole number.
func formatValue(value float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case math.Abs(value) >= 1000 || value == math.Trunc(value):
		return fmt.Sprintf("%.0f", value)
	default:
		return fmt.Sprintf("%.3g", value)
	}
}

// formatRatio writes a ratio with two decimals.
func formatRatio(ratio float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f", ratio)
}
