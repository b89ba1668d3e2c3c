package main

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A resultKey names one sub-benchmark: BenchmarkSerial/peer=floor/N=5 is
// {"Serial", "floor", 5}.
type resultKey struct {
	scenario string
	peer     string
	nodes    int
}

// results holds every measurement of the input.
type results struct {
	scenarios []string // in the order they first appear
	peers     []string // in the order they first appear
	// values holds, per sub-benchmark and unit, one value per run.
	values map[resultKey]map[string][]float64
}

// procsSuffix is the -GOMAXPROCS suffix that go test adds to names.
var procsSuffix = regexp.MustCompile(`-[0-9]+$`)

// parse reads go test -bench output. Lines other than benchmark results,
// such as a failed benchmark's "--- FAIL" line, and results of benchmarks
// not named SCENARIO/peer=P/N=K, are ignored.
func parse(input io.Reader) (*results, error) {
	r := &results{values: make(map[resultKey]map[string][]float64)}
	scanner := bufio.NewScanner(input)
	for scanner.Scan() {
		key, measurements, ok := parseLine(scanner.Text())
		if !ok {
			continue
		}
		if !slices.Contains(r.scenarios, key.scenario) {
			r.scenarios = append(r.scenarios, key.scenario)
		}
		if !slices.Contains(r.peers, key.peer) {
			r.peers = append(r.peers, key.peer)
		}
		units := r.values[key]
		if units == nil {
			units = make(map[string][]float64)
			r.values[key] = units
		}
		for unit, value := range measurements {
			units[unit] = append(units[unit], value)
		}
	}
	return r, scanner.Err()
}

// parseLine parses one result line: the name, the iteration count, then
// value-unit pairs.
func parseLine(line string) (resultKey, map[string]float64, bool) {
	fields := strings.Fields(line)
	if len(fields) < 4 || len(fields)%2 != 0 || !strings.HasPrefix(fields[0], "Benchmark") {
		return resultKey{}, nil, false
	}
	key, ok := parseName(fields[0])
	if !ok {
		return resultKey{}, nil, false
	}
	if _, err := strconv.Atoi(fields[1]); err != nil {
		return resultKey{}, nil, false
	}
	measurements := make(map[string]float64)
	for i := 2; i+1 < len(fields); i += 2 {
		value, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return resultKey{}, nil, false
		}
		measurements[fields[i+1]] = value
	}
	return key, measurements, true
}

// parseName splits BenchmarkSCENARIO/peer=P/N=K-PROCS, or
// BenchmarkSCENARIO/VARIANT/peer=P/N=K-PROCS, whose scenario is then
// SCENARIO/VARIANT (BenchmarkHolds/holds=1000/peer=lockmux/N=3).
func parseName(name string) (resultKey, bool) {
	parts := strings.Split(procsSuffix.ReplaceAllString(name, ""), "/")
	if len(parts) == 4 && strings.Contains(parts[1], "=") && !strings.HasPrefix(parts[1], "peer=") {
		parts = []string{parts[0] + "/" + parts[1], parts[2], parts[3]}
	}
	if len(parts) != 3 {
		return resultKey{}, false
	}
	key := resultKey{scenario: strings.TrimPrefix(parts[0], "Benchmark")}
	peer, ok := strings.CutPrefix(parts[1], "peer=")
	if !ok {
		return resultKey{}, false
	}
	key.peer = peer
	nodes, ok := strings.CutPrefix(parts[2], "N=")
	if !ok {
		return resultKey{}, false
	}
	n, err := strconv.Atoi(nodes)
	if err != nil {
		return resultKey{}, false
	}
	key.nodes = n
	return key, true
}

// scenarioOrder is the order of the report: go test runs the benchmarks
// file by file, in alphabetical order.
var scenarioOrder = []string{"Serial", "Parallel", "Contention", "Handoff", "HandoffPair"}

// scenariosInOrder returns the scenarios of scenarioOrder that have
// results, then any others in the order they first appear.
func (r *results) scenariosInOrder() []string {
	var ordered []string
	for _, scenario := range scenarioOrder {
		if slices.Contains(r.scenarios, scenario) {
			ordered = append(ordered, scenario)
		}
	}
	for _, scenario := range r.scenarios {
		if !slices.Contains(ordered, scenario) {
			ordered = append(ordered, scenario)
		}
	}
	return ordered
}

// median returns the median of key's values in unit, and false when there
// are none.
func (r *results) median(key resultKey, unit string) (float64, bool) {
	values := slices.Clone(r.values[key][unit])
	if len(values) == 0 {
		return 0, false
	}
	slices.Sort(values)
	middle := len(values) / 2
	if len(values)%2 == 1 {
		return values[middle], true
	}
	return (values[middle-1] + values[middle]) / 2, true
}

// runs returns how many runs key has.
func (r *results) runs(key resultKey) int {
	return len(r.values[key]["ns/op"])
}

// nodeCounts returns the numbers of nodes measured in scenario, in
// increasing order.
func (r *results) nodeCounts(scenario string) []int {
	var counts []int
	for key := range r.values {
		if key.scenario == scenario && !slices.Contains(counts, key.nodes) {
			counts = append(counts, key.nodes)
		}
	}
	slices.Sort(counts)
	return counts
}

// has reports whether scenario has results in unit.
func (r *results) has(scenario, unit string) bool {
	for key, units := range r.values {
		if key.scenario == scenario && len(units[unit]) > 0 {
			return true
		}
	}
	return false
}
