// Command summary reads the output of the lockmux benchmarks (go test
// -bench in bench/) and prints, per scenario and number of nodes, the
// median of each peer's results with its ratio to the floor and to lockmux
// at the same N, then checks the performance targets of DESIGN.md §3.
//
//	go run ./cmd/summary results.txt
//	go test -run '^$' -bench . -benchmem | go run ./cmd/summary
//
// A ratio is the peer's value divided by the reference's, whatever the
// metric: below 1 is better for ns/op and gap-µs, above 1 for acq/s.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

func main() {
	input := io.Reader(os.Stdin)
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: summary [FILE]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		file, err := os.Open(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "summary:", err)
			os.Exit(1)
		}
		defer file.Close()
		input = file
	}
	results, err := parse(input)
	if err != nil {
		fmt.Fprintln(os.Stderr, "summary:", err)
		os.Exit(1)
	}
	if len(results.scenarios) == 0 {
		fmt.Fprintln(os.Stderr, "summary: no benchmark results in the input")
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for _, scenario := range results.scenariosInOrder() {
		writeScenario(out, results, scenario)
	}
	writeTargets(out, results)
}
