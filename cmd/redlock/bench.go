package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockmux/lockmux/internal/latency"
	"github.com/lockmux/lockmux/redlock"
)

// benchLockTimeout bounds one acquisition of bench. An acquisition in
// flight when the run ends is not cancelled: a command abandoned at its
// deadline closes its connection and fails the other workers' commands on
// it, which would count as errors that only the stop caused. A release
// has no bound of its own: it is one round, which --node-timeout bounds.
const benchLockTimeout = 5 * time.Second

// errorPause is how long a worker of bench or demo waits after a failed
// lock, so that nodes that are down do not make it spin.
const errorPause = 10 * time.Millisecond

// pause waits for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

var benchHelp = commandHelp{
	name:     "bench",
	synopsis: "redlock bench [flags]",
	about: `Measure lock latency and throughput: workers lock and unlock keys in a loop
for --duration, against the nodes of --addrs or REDLOCK_ADDRS or, when none
are given, against --nodes servers started for the run (redis-server
processes without persistence when the binary is on the PATH, otherwise
embedded miniredis servers).

--holds N measures renewed holds instead of cycles: N Mutexes with
AutoExtend on one client, taken by 256 goroutines and kept for --duration
(2m by default, with --ttl 30s and --nodes 3 unless given). It reports the
time to take them, the memory per hold, the client's CPU while it renews
them, the node commands per renewal, how late the renewals start against
their schedule, and the holds lost.

--mode serial runs one worker, so that a cycle shows the round trips alone.
--mode concurrent runs --workers workers on one client, whose commands share
the writes to each node. With --keys below --workers, workers contend for the
same keys, and the lock latency includes the waiting.

A progress line is shown on stderr while it runs (rewritten in place on a
terminal, a plain line every 2 s otherwise); at the end come the
percentiles of the lock, unlock and whole-cycle latencies and the
throughput, or with --json one JSON object on stdout.`,
	examples: `# Against five servers started for the run:
redlock bench --mode concurrent --workers 32 --duration 10s

# Against your nodes, one worker, in JSON for a dashboard:
redlock bench --addrs 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 --mode serial --json

# Contention: 16 workers on one key
redlock bench --workers 16 --keys 1

# 100,000 renewed holds on one client for two minutes
redlock bench --holds 100000`,
	exits: `0    the benchmark ran
1    no cycle completed
64   bad usage or configuration`,
}

// benchFlags holds the flags of bench.
type benchFlags struct {
	connection connectionFlags
	mode       string
	workers    int
	duration   time.Duration
	keys       int
	ttl        time.Duration
	nodes      int
	embedded   bool
	json       bool
	holds      int
}

// benchCounters are what the workers count, read by the progress line.
type benchCounters struct {
	cycles, errors atomic.Uint64
	lock, unlock   latency.Histogram
	cycle          latency.Histogram

	mu         sync.Mutex
	firstError error
}

func (c *benchCounters) fail(err error) {
	c.errors.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstError == nil {
		c.firstError = err
	}
}

func benchCommand(ctx context.Context, env *environment, args []string) int {
	var f benchFlags
	flags := newFlagSet(benchHelp)
	f.connection.register(flags, true)
	flags.StringVar(&f.mode, "mode", "concurrent", "serial (one worker) or concurrent")
	flags.IntVar(&f.workers, "workers", 32, "the number of concurrent workers")
	flags.DurationVar(&f.duration, "duration", 10*time.Second, "how long to run")
	flags.IntVar(&f.keys, "keys", 0, "the number of distinct keys (default: one per worker)")
	flags.DurationVar(&f.ttl, "ttl", redlock.DefaultTTL, "the locks' TTL")
	flags.IntVar(&f.nodes, "nodes", 5, "the number of servers to start when no addresses are given")
	flags.BoolVar(&f.embedded, "embedded", false, "start embedded miniredis servers even when redis-server is on the PATH")
	flags.BoolVar(&f.json, "json", false, "print the result as one JSON object")
	flags.IntVar(&f.holds, "holds", 0, "measure this many renewed holds instead of lock cycles")
	if status, ok := parseFlags(env, flags, benchHelp, args); !ok {
		return status
	}
	set := map[string]bool{}
	flags.Visit(func(flag *flag.Flag) { set[flag.Name] = true })
	workersSet := set["workers"]
	if f.holds > 0 {
		if !set["duration"] {
			f.duration = holdsDefaultDuration
		}
		if !set["ttl"] {
			f.ttl = holdsDefaultTTL
		}
		if !set["nodes"] {
			f.nodes = holdsDefaultNodes
		}
	}
	switch {
	case f.holds < 0:
		return usageError(env, benchHelp, "--holds must not be negative")
	case f.holds > 0 && (set["mode"] || workersSet || set["keys"]):
		return usageError(env, benchHelp, "--holds takes no --mode, --workers or --keys")
	case flags.NArg() != 0:
		return usageError(env, benchHelp, "unexpected argument %q", flags.Arg(0))
	case f.mode != "serial" && f.mode != "concurrent":
		return usageError(env, benchHelp, "--mode must be serial or concurrent, not %q", f.mode)
	case f.mode == "serial" && workersSet && f.workers != 1:
		return usageError(env, benchHelp, "--mode serial runs one worker; drop --workers or use --mode concurrent")
	case f.workers < 1, f.keys < 0, f.nodes < 1:
		return usageError(env, benchHelp, "--workers and --nodes must be at least 1, and --keys not negative")
	case f.duration <= 0:
		return usageError(env, benchHelp, "--duration must be positive")
	case f.ttl < redlock.MinTTL:
		return usageError(env, benchHelp, "--ttl %v is shorter than %v", f.ttl, redlock.MinTTL)
	}
	if f.mode == "serial" {
		f.workers = 1
	}
	if f.keys == 0 {
		f.keys = f.workers
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	addresses, err := f.connection.list(env)
	if err == nil {
		err = distinct(addresses)
	}
	if err != nil {
		return usageError(env, benchHelp, "%v", err)
	}
	servers := "given"
	options := f.connection.options()
	if len(addresses) == 0 {
		options.MaxTTL = max(options.MaxTTL, f.ttl) // nothing else locks on the servers it starts
	} else if err := f.connection.checkTTL(f.ttl); err != nil {
		return usageError(env, benchHelp, "%v", err)
	}
	if len(addresses) == 0 {
		cluster, err := startCluster(ctx, clusterOptions{nodes: f.nodes, embedded: f.embedded})
		if err != nil {
			fmt.Fprintf(env.stderr, "redlock bench: %v\n", err)
			return exitFailed
		}
		defer cluster.close()
		servers = cluster.kind
		addresses = cluster.addresses()
		fmt.Fprintf(env.stderr, "redlock bench: started %s\n", cluster.description)
	}
	if f.holds > 0 {
		return benchHolds(ctx, env, f, options, addresses, servers)
	}
	client, err := redlock.New(addresses, options)
	if err != nil {
		fmt.Fprintf(env.stderr, "redlock bench: %v\n", err)
		return statusOf(err)
	}
	defer client.Close()

	counters := &benchCounters{}
	runContext, cancel := context.WithTimeout(ctx, f.duration)
	defer cancel()
	progress := startProgress(env, func(elapsed time.Duration) string {
		cycles := counters.cycles.Load()
		return fmt.Sprintf("bench  %5.1fs/%v  cycles %d (%.0f/s)  lock p99 %s  errors %d", elapsed.Seconds(), f.duration,
			cycles, float64(cycles)/max(elapsed.Seconds(), 1e-9), latency.ShortDuration(counters.lock.Summary().P99), counters.errors.Load())
	})
	start := time.Now()
	var workers sync.WaitGroup
	for worker := range f.workers {
		mutexes := make([]*redlock.Mutex, 0, 1)
		for _, key := range workerKeys(worker, f.workers, f.keys) {
			mutexes = append(mutexes, client.NewMutex("redlock-bench:"+strconv.Itoa(key), redlock.MutexOptions{TTL: f.ttl}))
		}
		workers.Go(func() { benchWorker(runContext, mutexes, counters) })
	}
	workers.Wait()
	elapsed := time.Since(start)
	progress.finish()

	result := newBenchResult(f, servers, len(addresses), elapsed, counters)
	if f.json {
		writeJSON(env.stdout, result)
	} else {
		fmt.Fprint(env.stdout, result.text())
	}
	if ctx.Err() != nil {
		fmt.Fprintln(env.stderr, "redlock bench: interrupted")
		return exitSignalBase + int(syscall.SIGINT)
	}
	if result.Cycles == 0 {
		return exitFailed
	}
	return exitOK
}

// workerKeys returns the keys of one worker: a share of its own when there
// are at least as many keys as workers, otherwise one key shared with
// other workers.
func workerKeys(worker, workers, keys int) []int {
	if keys < workers {
		return []int{worker % keys}
	}
	var mine []int
	for key := worker; key < keys; key += workers {
		mine = append(mine, key)
	}
	return mine
}

// benchWorker locks and unlocks its mutexes in turn until ctx ends.
func benchWorker(ctx context.Context, mutexes []*redlock.Mutex, counters *benchCounters) {
	calls := context.WithoutCancel(ctx) // the run's end stops the loop, not a call in flight
	for i := 0; ctx.Err() == nil; i++ {
		m := mutexes[i%len(mutexes)]
		start := time.Now()
		lockContext, cancelLock := context.WithTimeout(calls, benchLockTimeout)
		err := m.Lock(lockContext)
		cancelLock()
		if err != nil {
			if ctx.Err() == nil {
				counters.fail(err)
				pause(ctx, errorPause) // nodes down: do not spin
			}
			continue
		}
		locked := time.Now()
		if err := m.Unlock(calls); err != nil {
			counters.fail(err)
			continue
		}
		counters.cycleDone(start, locked, time.Now())
	}
}

// cycleDone counts a cycle that started, held the lock from locked and
// ended at the given times. It does not allocate.
func (c *benchCounters) cycleDone(start, locked, end time.Time) {
	c.lock.Record(locked.Sub(start))
	c.unlock.Record(end.Sub(locked))
	c.cycle.Record(end.Sub(start))
	c.cycles.Add(1)
}

// benchLatency is one latency summary in the JSON result, in microseconds.
type benchLatency struct {
	Count   uint64  `json:"count"`
	Mean    float64 `json:"mean_us"`
	P50     float64 `json:"p50_us"`
	P90     float64 `json:"p90_us"`
	P99     float64 `json:"p99_us"`
	Maximum float64 `json:"max_us"`
}

func newBenchLatency(s latency.Summary) benchLatency {
	microseconds := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return benchLatency{Count: s.Count, Mean: microseconds(s.Mean), P50: microseconds(s.P50), P90: microseconds(s.P90),
		P99: microseconds(s.P99), Maximum: microseconds(s.Maximum)}
}

// benchResult is the result of bench, as --json prints it.
type benchResult struct {
	Mode       string       `json:"mode"`
	Workers    int          `json:"workers"`
	Keys       int          `json:"keys"`
	Nodes      int          `json:"nodes"`
	Servers    string       `json:"servers"`
	TTL        float64      `json:"ttl_ms"`
	Seconds    float64      `json:"duration_s"`
	Cycles     uint64       `json:"cycles"`
	Errors     uint64       `json:"errors"`
	FirstError string       `json:"first_error,omitempty"`
	Throughput float64      `json:"cycles_per_s"`
	Lock       benchLatency `json:"lock"`
	Unlock     benchLatency `json:"unlock"`
	Cycle      benchLatency `json:"cycle"`

	lock, unlock, cycle latency.Summary
}

func newBenchResult(f benchFlags, servers string, nodes int, elapsed time.Duration, counters *benchCounters) benchResult {
	r := benchResult{Mode: f.mode, Workers: f.workers, Keys: f.keys, Nodes: nodes, Servers: servers,
		TTL: float64(f.ttl.Milliseconds()), Seconds: elapsed.Seconds(),
		Cycles: counters.cycles.Load(), Errors: counters.errors.Load(),
		lock: counters.lock.Summary(), unlock: counters.unlock.Summary(), cycle: counters.cycle.Summary()}
	r.Throughput = float64(r.Cycles) / elapsed.Seconds()
	r.Lock, r.Unlock, r.Cycle = newBenchLatency(r.lock), newBenchLatency(r.unlock), newBenchLatency(r.cycle)
	counters.mu.Lock()
	if counters.firstError != nil {
		r.FirstError = counters.firstError.Error()
	}
	counters.mu.Unlock()
	return r
}

// text returns the result for people.
func (r benchResult) text() string {
	text := fmt.Sprintf("bench: %s, %s on %s, %s (%s), ttl %v, %.1fs\n",
		r.Mode, plural(r.Workers, "worker"), plural(r.Keys, "key"), plural(r.Nodes, "node"), r.Servers, time.Duration(r.TTL)*time.Millisecond, r.Seconds)
	text += fmt.Sprintf("  cycles   %d  (%.0f/s)\n", r.Cycles, r.Throughput)
	text += fmt.Sprintf("  errors   %d", r.Errors)
	if r.FirstError != "" {
		text += "  (first: " + r.FirstError + ")"
	}
	text += "\n"
	text += "  lock     " + r.lock.String() + "\n"
	text += "  unlock   " + r.unlock.String() + "\n"
	text += "  cycle    " + r.cycle.String() + "\n"
	return text
}
