package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockmux/lockmux/redlock"
)

// demoKey is the lock the demo's workers share.
const demoKey = "redlock-demo:counter"

// embeddedNodeTimeout is the demo's node timeout for embedded servers,
// unless --node-timeout says otherwise.
const embeddedNodeTimeout = 250 * time.Millisecond

var demoHelp = commandHelp{
	name:     "demo",
	synopsis: "redlock demo [flags]",
	about: `Show Redlock at work. Workers, each with a client of its own as if on
separate machines, contend for one lock that guards a counter; each hold reads
the counter, works a little and writes it plus one, with its fencing token, to
a fenced store that refuses any write older than the last it accepted.
Meanwhile the demo takes one node down at a time and brings it back.

With no addresses the demo starts --nodes servers of its own on free loopback
ports: redis-server processes with appendonly yes and appendfsync always
(so that a killed node comes back with its locks) when redis-server is on the
PATH, in turn paused with SIGSTOP, killed with SIGKILL, and killed with its
data removed, as a restart without persistence loses it: the workers'
clients quarantine (redlock.Options.Quarantine), so a node that restarted
votes again only after the TTL. Otherwise embedded miniredis servers in
this process, closed and restarted on the same address with their data. It
says which. With --addrs it uses your nodes and does not
touch them.

A progress line runs on stderr; at the end a report checks that the counter
equals the number of holds (no update was lost), that no stale write was
refused, that the fences strictly increased, and that no two holds
overlapped. Everything the demo started is stopped at the end, also on Ctrl-C.`,
	examples: `# The first thing to run:
go run ./cmd/redlock demo

# A short run with more contention:
redlock demo --duration 5s --workers 16

# Embedded servers even when redis-server is installed:
redlock demo --embedded`,
	exits: `0    every check held
1    a check failed
64   bad usage or configuration
130  interrupted (Ctrl-C)`,
}

// demoFlags holds the flags of demo.
type demoFlags struct {
	connection connectionFlags
	duration   time.Duration
	workers    int
	nodes      int
	ttl        time.Duration
	embedded   bool
}

func demoCommand(ctx context.Context, env *environment, args []string) int {
	var f demoFlags
	flags := newFlagSet(demoHelp)
	f.connection.register(flags, true)
	flags.DurationVar(&f.duration, "duration", 20*time.Second, "how long the workers run")
	flags.IntVar(&f.workers, "workers", 8, "the number of workers")
	flags.IntVar(&f.nodes, "nodes", 5, "the number of servers to start when no addresses are given")
	flags.DurationVar(&f.ttl, "ttl", 2*time.Second, "the lock's TTL")
	flags.BoolVar(&f.embedded, "embedded", false, "start embedded miniredis servers even when redis-server is on the PATH")
	if status, ok := parseFlags(env, flags, demoHelp, args); !ok {
		return status
	}
	switch {
	case flags.NArg() != 0:
		return usageError(env, demoHelp, "unexpected argument %q", flags.Arg(0))
	case f.workers < 1, f.nodes < 1:
		return usageError(env, demoHelp, "--workers and --nodes must be at least 1")
	case f.duration <= 0:
		return usageError(env, demoHelp, "--duration must be positive")
	case f.ttl < redlock.MinTTL:
		return usageError(env, demoHelp, "--ttl %v is shorter than %v", f.ttl, redlock.MinTTL)
	}
	addresses, err := f.connection.list(env)
	if err == nil {
		err = distinct(addresses)
	}
	if err != nil {
		return usageError(env, demoHelp, "%v", err)
	}
	nodeTimeoutSet := false
	flags.Visit(func(flag *flag.Flag) { nodeTimeoutSet = nodeTimeoutSet || flag.Name == "node-timeout" })

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cluster *localCluster
	description := fmt.Sprintf("%d nodes given with --addrs, left alone", len(addresses))
	if len(addresses) == 0 {
		cluster, err = startCluster(ctx, clusterOptions{nodes: f.nodes, embedded: f.embedded, persistent: true})
		if err != nil {
			fmt.Fprintf(env.stderr, "redlock demo: %v\n", err)
			return exitFailed
		}
		defer cluster.close()
		addresses, description = cluster.addresses(), cluster.description
		if cluster.kind == kindEmbedded && !nodeTimeoutSet {
			// The embedded servers share this process's processors with the
			// workers and run Lua slowly: give them more time per reply.
			f.connection.nodeTimeout = embeddedNodeTimeout
		}
	}
	fmt.Fprintf(env.stderr, "redlock demo: %d workers share the lock %q for %v on %s: %s\n",
		f.workers, demoKey, f.duration, strings.Join(addresses, ", "), description)

	// The clients quarantine, unless --quarantine=false: a node that
	// restarted votes again only after the TTL, the longest of the servers
	// the demo started.
	options := f.connection.options()
	if cluster != nil {
		options.MaxTTL = f.ttl
	} else if err := f.connection.checkTTL(f.ttl); err != nil {
		return usageError(env, demoHelp, "%v", err)
	}
	quarantine := options.Quarantine == redlock.QuarantineOn
	mutexes := make([]*redlock.Mutex, f.workers)
	clients := make([]*redlock.Client, f.workers)
	for i := range mutexes {
		client, err := redlock.New(addresses, options)
		if err != nil {
			fmt.Fprintf(env.stderr, "redlock demo: %v\n", err)
			return statusOf(err)
		}
		defer client.Close()
		clients[i] = client
		mutexes[i] = client.NewMutex(demoKey, redlock.MutexOptions{TTL: f.ttl, Fencing: true})
	}

	store := &fencedStore{}
	counters := &demoCounters{}
	var events *nodeEvents
	progress := startProgress(env, func(elapsed time.Duration) string {
		state := store.state()
		line := fmt.Sprintf("demo  %5.1fs/%v  holds %d  counter %d  stale writes rejected %d  overlaps %d",
			elapsed.Seconds(), f.duration, counters.holds.Load(), state.value, state.rejected, counters.overlaps.Load())
		if events != nil {
			if down := events.outage.Load(); down > 0 {
				line += fmt.Sprintf("  node %d down", down)
			} else {
				line += "  all nodes up"
			}
		}
		return line
	})
	runContext, cancel := context.WithTimeout(ctx, f.duration)
	defer cancel()
	start := time.Now()
	var group sync.WaitGroup
	if cluster != nil {
		events = newNodeEvents(cluster, progress, f.duration, quarantine)
		deadline := start.Add(f.duration)
		group.Go(func() { events.run(runContext, deadline) })
	}
	for _, m := range mutexes {
		group.Go(func() { demoWorker(runContext, m, store, counters) })
	}
	group.Wait()
	elapsed := time.Since(start)
	progress.finish()

	report := demoReport{flags: f, elapsed: elapsed, store: store.state(), counters: counters, events: events,
		interrupted: ctx.Err() != nil, quarantine: quarantine}
	for _, client := range clients {
		report.quarantined += client.Stats().Quarantined
	}
	fmt.Fprint(env.stdout, report.text())
	switch {
	case report.interrupted:
		return exitSignalBase + int(syscall.SIGINT)
	case !report.passed():
		return exitFailed
	}
	return exitOK
}

// demoReport is the end of the demo: what happened and which checks held.
type demoReport struct {
	flags       demoFlags
	elapsed     time.Duration
	store       storeState
	counters    *demoCounters
	events      *nodeEvents // nil when the nodes were given
	interrupted bool
	// quarantine is set when the clients quarantined, and quarantined
	// counts their confirmations that did not count.
	quarantine  bool
	quarantined uint64
}

// demoCheck is one line of the report's verdict.
type demoCheck struct {
	name   string
	detail string
	// result is "ok", "FAILED" or "skipped".
	result string
}

// checks returns the verdicts.
func (r demoReport) checks() []demoCheck {
	holds := r.counters.holds.Load()
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAILED"
	}
	checks := []demoCheck{
		{"acquisitions", fmt.Sprintf("%d holds in %.1fs (%.1f/s)", holds, r.elapsed.Seconds(), float64(holds)/r.elapsed.Seconds()), verdict(holds > 0)},
		{"counter", fmt.Sprintf("%d, for %d holds: no update lost", r.store.value, holds), verdict(r.store.value == holds)},
		{"stale writes", fmt.Sprintf("%d refused by the fenced store", r.store.rejected), verdict(r.store.rejected == 0)},
		{"overlaps", fmt.Sprintf("%d holds began while another was running", r.counters.overlaps.Load()), verdict(r.counters.overlaps.Load() == 0)},
	}
	fences := demoCheck{name: "fences"}
	switch {
	case r.counters.unfenced.Load() == holds && holds > 0:
		fences.detail = "not available: this build's Mutex.Fence returned 0, so the store compared nothing"
		fences.result = "skipped"
	case r.counters.unfenced.Load() > 0:
		fences.detail = fmt.Sprintf("%d holds had no fence", r.counters.unfenced.Load())
		fences.result = "FAILED"
	default:
		fences.detail = fmt.Sprintf("strictly increasing from %d to %d, %d repeated", r.store.firstFence, r.store.lastFence, r.store.repeated)
		fences.result = verdict(r.store.repeated == 0 && r.store.rejected == 0)
	}
	checks = append(checks, fences)
	if r.events != nil {
		stopped, crashed, wiped, failures := r.events.stopped.Load(), r.events.crashed.Load(), r.events.wiped.Load(), r.events.failures.Load()
		checks = append(checks, demoCheck{"node events",
			fmt.Sprintf("%d stops, %d crashes and %d restarts without data, one node at a time, each brought back; %d failed",
				stopped, crashed, wiped, failures),
			verdict(failures == 0)})
		quarantine := demoCheck{name: "quarantine", result: "skipped", detail: "off (--quarantine=false)"}
		if r.quarantine {
			quarantine.detail = fmt.Sprintf("each node restarted voted again only after the TTL: %d of its votes were not counted "+
				"while it might have forgotten a hold", r.quarantined)
			quarantine.result = verdict(wiped == 0 || r.quarantined > 0)
		}
		checks = append(checks, quarantine)
	}
	return checks
}

// passed reports whether every check held.
func (r demoReport) passed() bool {
	for _, check := range r.checks() {
		if check.result == "FAILED" {
			return false
		}
	}
	return true
}

// text returns the report.
func (r demoReport) text() string {
	var text strings.Builder
	text.WriteString("\nredlock demo report\n")
	for _, check := range r.checks() {
		fmt.Fprintf(&text, "  %-8s %-13s %s\n", check.result, check.name, check.detail)
	}
	fmt.Fprintf(&text, "  lock wait      %s\n", r.counters.wait.Summary())
	fmt.Fprintf(&text, "  release        %s\n", r.counters.release.Summary())
	fmt.Fprintf(&text, "  lock errors    %d", r.counters.lockErrors.Load())
	r.counters.mu.Lock()
	if r.counters.lastError != nil {
		fmt.Fprintf(&text, " (last: %v)", r.counters.lastError)
	}
	r.counters.mu.Unlock()
	fmt.Fprintf(&text, "; releases not confirmed by a quorum: %d\n", r.counters.unconfirmed.Load())
	switch {
	case r.interrupted:
		text.WriteString("interrupted\n")
	case r.passed():
		text.WriteString("every check held\n")
	default:
		text.WriteString("a check FAILED\n")
	}
	return text.String()
}
