package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/manyholds"
	"github.com/lockmux/lockmux/redlock"
)

// The environment of BenchmarkHolds: the numbers of holds, comma-separated
// (default 1000,10000), and how long they are kept (default 25s: two
// renewals of each hold at the 30 s TTL).
const (
	holdsEnv     = "LOCKMUX_BENCH_HOLDS"
	holdsKeepEnv = "LOCKMUX_BENCH_HOLDS_KEEP"
)

// holdsNodes is the number of nodes BenchmarkHolds uses.
const holdsNodes = 3

// BenchmarkHolds takes N holds, each a Mutex with a 30 s TTL and
// AutoExtend, on one lockmux Client over 3 nodes, with 256 goroutines,
// and keeps them. One op is the whole run. It reports taken-s (the time
// to take them all), B/hold (the live heap per hold beyond its key),
// core-% (the client's CPU while it keeps them, in % of one core),
// cmd/renewal (the nodes' commands per renewal), late-p99-ms (how late
// the renewals started against their schedule) and lost (the holds
// lost).
func BenchmarkHolds(b *testing.B) {
	counts, keep, err := holdsSettings()
	if err != nil {
		b.Fatal(err)
	}
	addresses := nodeAddresses(b)[:holdsNodes]
	for _, holds := range counts {
		b.Run(fmt.Sprintf("holds=%d/peer=lockmux/N=%d", holds, holdsNodes), func(b *testing.B) {
			flushAll(b, addresses)
			var result manyholds.Result
			for range b.N {
				result, err = manyholds.Run(b.Context(), addresses, manyholds.Options{Holds: holds, Keep: keep,
					Client: redlock.Options{MaxTTL: manyholds.DefaultTTL}})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(result.TakenIn.Seconds(), "taken-s")
			b.ReportMetric(result.BytesPerHold, "B/hold")
			b.ReportMetric(100*result.CoreShare(), "core-%")
			b.ReportMetric(result.CommandsPerRenewal(), "cmd/renewal")
			b.ReportMetric(result.NodeCommandsPerRenewal(), "node-cmd/renewal")
			b.ReportMetric(float64(result.LatenessP99)/float64(time.Millisecond), "late-p99-ms")
			b.ReportMetric(float64(result.Lost), "lost")
		})
	}
}

// holdsSettings reads holdsEnv and holdsKeepEnv.
func holdsSettings() ([]int, time.Duration, error) {
	list, keep := "1000,10000", 25*time.Second
	if value := os.Getenv(holdsEnv); value != "" {
		list = value
	}
	if value := os.Getenv(holdsKeepEnv); value != "" {
		var err error
		if keep, err = time.ParseDuration(value); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", holdsKeepEnv, err)
		}
	}
	var counts []int
	for field := range strings.SplitSeq(list, ",") {
		count, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || count < 1 {
			return nil, 0, fmt.Errorf("%s: %q is not a number of holds", holdsEnv, field)
		}
		counts = append(counts, count)
	}
	return counts, keep, nil
}
