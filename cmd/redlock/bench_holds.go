package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockmux/lockmux/internal/manyholds"
	"github.com/lockmux/lockmux/redlock"
)

// The defaults of bench --holds that differ from the cycles' defaults:
// the holds are kept two minutes, with a 30 s TTL, over three nodes.
const (
	holdsDefaultDuration = 2 * time.Minute
	holdsDefaultTTL      = 30 * time.Second
	holdsDefaultNodes    = 3
)

// holdsResult is the result of bench --holds, as --json prints it.
type holdsResult struct {
	Mode               string  `json:"mode"`
	Holds              int     `json:"holds"`
	Nodes              int     `json:"nodes"`
	Servers            string  `json:"servers"`
	TTL                float64 `json:"ttl_ms"`
	TakenIn            float64 `json:"taken_s"`
	Kept               float64 `json:"kept_s"`
	BytesPerHold       float64 `json:"bytes_per_hold"`
	BytesPerHoldTaken  float64 `json:"bytes_per_hold_taken"`
	CoreShare          float64 `json:"core_percent"`
	Renewals           uint64  `json:"renewals"`
	FailedRenewals     uint64  `json:"failed_renewals"`
	CommandsPerRenewal float64 `json:"commands_per_renewal"`
	NodeCommands       float64 `json:"node_commands_per_renewal"`
	LatenessP99        float64 `json:"lateness_p99_ms"`
	LatenessMax        float64 `json:"lateness_max_ms"`
	Lost               int64   `json:"lost"`
}

// benchHolds runs bench --holds: f.holds renewed holds on one Client,
// kept for f.duration (see package manyholds), with the client options.
func benchHolds(ctx context.Context, env *environment, f benchFlags, options redlock.Options, addresses []string, servers string) int {
	var phase atomic.Value
	phase.Store("taking")
	var lost atomic.Int64
	progress := startProgress(env, func(elapsed time.Duration) string {
		return fmt.Sprintf("bench  %5.1fs  %d holds, %s  lost %d", elapsed.Seconds(), f.holds, phase.Load(), lost.Load())
	})
	result, err := manyholds.Run(ctx, addresses, manyholds.Options{Holds: f.holds, TTL: f.ttl, Keep: f.duration,
		Client: options,
		Progress: func(kept time.Duration, lostSoFar int64) {
			phase.Store(fmt.Sprintf("kept %.0fs/%v", kept.Seconds(), f.duration))
			lost.Store(lostSoFar)
		}})
	progress.finish()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(env.stderr, "redlock bench: %v\n", err)
		return statusOf(err)
	}
	milliseconds := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	r := holdsResult{Mode: "holds", Holds: result.Holds, Nodes: result.Nodes, Servers: servers, TTL: milliseconds(result.TTL),
		TakenIn: result.TakenIn.Seconds(), Kept: result.Kept.Seconds(),
		BytesPerHold: result.BytesPerHold, BytesPerHoldTaken: result.BytesPerHoldTaken, CoreShare: 100 * result.CoreShare(),
		Renewals: result.Renewals, FailedRenewals: result.FailedRenewals, CommandsPerRenewal: result.CommandsPerRenewal(),
		NodeCommands: result.NodeCommandsPerRenewal(),
		LatenessP99:  milliseconds(result.LatenessP99), LatenessMax: milliseconds(result.LatenessMax), Lost: result.Lost}
	if f.json {
		writeJSON(env.stdout, r)
	} else {
		fmt.Fprint(env.stdout, r.text())
	}
	if ctx.Err() != nil {
		fmt.Fprintln(env.stderr, "redlock bench: interrupted")
		return exitSignalBase + int(syscall.SIGINT)
	}
	return exitOK
}

// text returns the result for people.
func (r holdsResult) text() string {
	text := fmt.Sprintf("bench: %s renewed, %s (%s), ttl %v, kept %.1fs\n",
		plural(r.Holds, "hold"), plural(r.Nodes, "node"), r.Servers, time.Duration(r.TTL)*time.Millisecond, r.Kept)
	text += fmt.Sprintf("  taken in      %.2fs\n", r.TakenIn)
	text += fmt.Sprintf("  memory        %.0f B per hold (%.0f B when taken)\n", r.BytesPerHold, r.BytesPerHoldTaken)
	text += fmt.Sprintf("  client CPU    %.2f %% of a core\n", r.CoreShare)
	text += fmt.Sprintf("  renewals      %d (%d failed), %.2f commands each (%.2f with the scripts' own)\n",
		r.Renewals, r.FailedRenewals, r.CommandsPerRenewal, r.NodeCommands)
	text += fmt.Sprintf("  lateness      p99 %.1fms, max %.1fms\n", r.LatenessP99, r.LatenessMax)
	text += fmt.Sprintf("  lost          %d\n", r.Lost)
	return text
}
