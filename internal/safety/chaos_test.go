//go:build linux

package safety_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/safety"
	"github.com/lockmux/lockmux/internal/workgroup"
	"github.com/lockmux/lockmux/redlock"
)

// seedFlag replays a run's nemesis schedule; LOCKMUX_CHAOS_SEED does the
// same. Zero draws a seed from the clock.
var seedFlag = flag.Uint64("chaos.seed", 0, "seed of the chaos run's nemesis (0: from the clock); also LOCKMUX_CHAOS_SEED")

// runSeed returns the seed of a run.
func runSeed(t *testing.T) uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if text := os.Getenv("LOCKMUX_CHAOS_SEED"); text != "" {
		seed, err := strconv.ParseUint(text, 10, 64)
		require.NoError(t, err, "LOCKMUX_CHAOS_SEED")
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// profile is the shape of a chaos run (RELIABILITY.md §8.4).
type profile struct {
	ttl                   time.Duration
	keys                  int
	semaphoreLimit        int  // the permits of the semaphore the workers hold too; 0 for none
	readWrite             bool // the workers also read and write a read/write lock
	fair                  bool // the workers also lock a fair lock
	election              bool // the workers also campaign in an election
	quarantine            bool // the workers' clients quarantine nodes that lost keys (F2 is then a must-survive fault)
	replica               bool // the last node has a replica, which F34 promotes
	member                bool // the clients' last node is a Redis Cluster member (F25, F36)
	localClients          int  // in-process clients, each with its own proxies
	localGoroutines       int
	processes             int // worker processes (phase B pauses them)
	processGoroutines     int
	longChance            float64
	impatient             int // goroutines of each in-process client with short contexts in phase A
	warmup, phaseA        time.Duration
	faults                []fault
	firstFaults           []fault // injected first in phase A, in this order, then faults; each must run
	phaseB                time.Duration
	canaries              int           // repetitions of each canary of phase C; 0 skips phase C
	latencyLimit          time.Duration // C5 (c): the p99 of the attempts in steady state, less the round-trip floor's
	minStaleWritesRefused int
}

// runFigures are what a run prints.
type runFigures struct {
	seed                                         uint64
	holds, faults, canaryViolations, staleWrites int
	// shortCalls counts the calls with short contexts, and contextErrors
	// those that ended with a context error.
	shortCalls, contextErrors int
	duration                  time.Duration
}

// chaosSemaphore, chaosReadWrite, chaosFair and chaosElection are the
// names of the semaphore, the read/write lock, the fair lock and the
// election of a chaos run. Every lock of a run has a hash tag, as the keys
// a lock writes together on a cluster member must share a slot.
const (
	chaosSemaphore = "lock:{semaphore}"
	chaosReadWrite = "lock:{rw}"
	chaosFair      = "lock:{fair}"
	chaosElection  = "lock:{election}"
)

// runChaos runs the chaos workload with profile p and checks its history.
func runChaos(t *testing.T, p profile) runFigures {
	started := time.Now()
	seed := runSeed(t)
	t.Logf("chaos seed %d (replay with -chaos.seed=%d or LOCKMUX_CHAOS_SEED=%d)", seed, seed, seed)
	fmt.Printf("chaos seed %d\n", seed) // also when the binary dies before the logs are printed
	rng := rand.New(rand.NewPCG(seed, 0x5afe))

	shim, noShim := "", "phase C needs no clock shim"
	if p.canaries > 0 {
		if shim, noShim = buildShim(t); shim == "" {
			t.Logf("skipping the clock canaries of phase C: %s", noShim)
		}
	}
	c := startCluster(t, clusterOptions{nodes: 5, shim: shim, replica: p.replica, member: p.member})
	if p.quarantine {
		// The servers are new, and stated so, as the quarantine asks.
		trusting, err := redlock.New(c.addresses(), redlock.Options{})
		require.NoError(t, err)
		require.NoError(t, trusting.TrustNodes(context.Background()))
		trusting.Close()
	}
	rec := safety.NewRecorder()
	rec.SetPhase(safety.PhaseWarmup)
	socketDir, err := os.MkdirTemp("", "safety")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(socketDir) })
	require.NoError(t, rec.Listen(filepath.Join(socketDir, "recorder.sock")))
	t.Cleanup(func() { rec.Close() })
	t.Cleanup(func() { dumpOnFailure(t, seed, rec, c) })

	var keys []string
	for i := range p.keys {
		keys = append(keys, fmt.Sprintf("lock:{%d}", i))
	}
	var permits []string // the keys of the semaphore's permits
	for slot := range p.semaphoreLimit {
		permits = append(permits, fmt.Sprintf("%s:permit:%d", chaosSemaphore, slot))
	}
	readWrite, fair, election := "", "", ""
	if p.readWrite {
		readWrite = chaosReadWrite
	}
	if p.fair {
		fair = chaosFair
	}
	if p.election {
		election = chaosElection
	}
	base := workerConfig{Keys: keys, Semaphore: chaosSemaphore, SemaphoreLimit: p.semaphoreLimit, ReadWrite: readWrite, Fair: fair, Quarantine: p.quarantine,
		Resource: c.resource.Addr(), TTL: p.ttl, NodeTimeout: 50 * time.Millisecond,
		RetryMin: 10 * time.Millisecond, RetryMax: 60 * time.Millisecond, AcquireTimeout: 2 * p.ttl,
		LongChance: p.longChance, Socket: filepath.Join(socketDir, "recorder.sock"), Lifetime: 10 * time.Minute}
	base.Election = election

	// Every client has its own proxy to every plain node, and reaches the
	// cluster member directly.
	var links [][]*faultnet.Proxy
	var local []workerConfig
	for i := range p.localClients {
		proxies := c.proxies(t)
		links = append(links, proxies)
		config := base
		config.Name, config.Goroutines, config.Addresses, config.Seed = fmt.Sprintf("local%d", i+1), p.localGoroutines, c.withMember(proxyAddresses(proxies)), rng.Uint64()
		config.Impatient = p.impatient
		local = append(local, config)
	}
	var remote []workerConfig
	for i := range p.processes {
		proxies := c.proxies(t)
		links = append(links, proxies)
		config := base
		config.Name, config.Goroutines, config.Addresses, config.Seed = fmt.Sprintf("p%d", i+1), p.processGoroutines, c.withMember(proxyAddresses(proxies)), rng.Uint64()
		remote = append(remote, config)
	}
	var canaryProxies [2][]*faultnet.Proxy
	if p.canaries > 0 {
		canaryProxies = [2][]*faultnet.Proxy{c.proxies(t), c.proxies(t)}
	}
	floorProxies := c.proxies(t) // the round-trip floor's, never faulted
	// The baseline of C6: servers, proxies and recorder up, no client yet.
	goroutines := safety.Goroutines(-1, 0)
	descriptors, err := safety.Descriptors(-1, 0)
	require.NoError(t, err)
	var kit *canaryKit
	if p.canaries > 0 {
		kit = newCanaryKit(t, c, rec, "lock:canary", &canaryProxies)
	}

	// The workers.
	observer, member := &latencyObserver{}, &memberObserver{}
	workersStarted := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var workers workgroup.Group
	for _, config := range local {
		workers.Go(func() error {
			if err := runWorkers(ctx, config, rec, redlock.Observers(observer, member)); err != nil {
				return fmt.Errorf("workers of %s: %w", config.Name, err)
			}
			return nil
		})
	}
	var processes []*workerProcess
	for _, config := range remote {
		processes = append(processes, startWorkerProcess(t, config))
	}
	stopWorkers := func() {
		rec.SetPhase(safety.PhaseStop)
		assert.NoError(t, workers.Wait())
		for _, p := range processes {
			assert.NoError(t, p.wait(30*time.Second))
		}
	}
	defer func() {
		if rec.Phase() != safety.PhaseStop {
			stopWorkers()
		}
	}()

	n := &nemesis{t: t, rng: rng, cluster: c, links: links, rec: rec, ttl: p.ttl, counts: map[string]int{}, member: member,
		memberLocks: slices.DeleteFunc(slices.Concat(keys, []string{chaosSemaphore, readWrite, fair, election}), func(name string) bool { return name == "" })}
	// C5 (c) bounds the attempts of steady state: the warm-up lasts until
	// every worker, in-process or not, has made its first contact with
	// the nodes (dials, handshakes, epoch markers), and then p.warmup more,
	// during which the attempts are collected.
	workerCount := p.localClients*p.localGoroutines + p.processes*p.processGoroutines
	require.True(t, waitFirstContact(rec, workerCount, 30*time.Second), "the workers did not all end an acquisition within 30 s")
	firstContact := time.Since(workersStarted)
	// The floor's rounds go to the plain nodes, through proxies: the
	// workers' rounds also have the cluster member, reached directly, and
	// their quorum's slowest reply is then no later than the floor's.
	floor := startRoundTripFloor(t, proxyAddresses(floorProxies))
	observer.collect(windowSteady)
	time.Sleep(p.warmup)
	observer.collect(windowOff)
	floorLatencies := floor.finish()

	// Phase A: faults that must be survived.
	phaseAStart := rec.SetPhase(safety.PhaseRun)
	n.mustSurvivePhase(p.firstFaults, p.faults, p.phaseA)
	phaseAEnd := safety.Now()

	// Phase B: client pauses.
	var pauses pauseResult
	var phaseBStart, phaseBEnd int64
	if p.phaseB > 0 && len(processes) > 0 {
		phaseBStart = rec.SetPhase(safety.PhasePause)
		pauses = n.pausePhase(processes, newTracker(rec), p.phaseB)
		phaseBEnd = safety.Now()
		t.Logf("phase B: %d pauses of %v to %v", pauses.pauses, pauses.shortest.Round(time.Millisecond), pauses.longest.Round(time.Millisecond))
	}

	// Phase C: canaries, with the workers idle.
	if kit != nil && !t.Failed() {
		rec.SetPhase(safety.PhaseIdle)
		// The canaries' faults hit every key: let the workers' holds and
		// their Lock calls end, so that the canary windows hold only the
		// scripted holds.
		idle := newTracker(rec)
		for end := time.Now().Add(3*p.ttl + 2*time.Second); !idle.quiet() && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		assert.True(t, idle.quiet(), "the workers did not go idle for phase C")
		for range p.canaries {
			if shim != "" {
				kit.clockJump()
			}
			kit.restart()
			if p.election {
				kit.electionRestart()
			}
			if shim != "" {
				kit.drift(1.05)
			}
		}
		t.Logf("phase C: %d scenarios, %d stale writes of the first holder refused, %d fence regressions (documented)",
			kit.runs, kit.refused, kit.regressions)
	}

	// Heal, stop the workers, and probe liveness (C5 a).
	stopWorkers()
	for _, client := range links {
		for _, proxy := range client {
			proxy.Pass()
		}
	}
	time.Sleep(3 * p.ttl)
	probe(t, c, rec, keys, p.ttl)
	if kit != nil {
		kit.close()
	}
	lastRelease := time.Now()

	// Check the history.
	history := rec.History()
	report := safety.Check(history, safety.Options{
		// The workers read the clock next to the library's calls, not
		// inside them: on two cores shared with five servers, proxies and
		// worker processes, a goroutine can be preempted for milliseconds
		// between its reading and the library's (runs have seen 2.3 ms).
		// C4's bounds are the library's claims, so a late reading only
		// costs a false finding; 10 ms is still a fifth of the drift
		// canary's error.
		Tolerance:    10 * time.Millisecond,
		Resource:     c.resourceLog(t, slices.Concat(keys, permits, []string{chaosReadWrite, chaosFair, chaosElection, "lock:canary"})),
		Semaphores:   map[string]int{chaosSemaphore: p.semaphoreLimit},
		ReadWrite:    map[string]bool{chaosReadWrite: p.readWrite},
		LivenessKeys: keys, LivenessFrom: phaseAStart, LivenessTo: max(phaseAEnd, phaseBEnd),
		ProbeLimit:     2*p.ttl + base.RetryMax,
		RequiredFaults: faultNames(p.firstFaults),
	})
	assert.NoError(t, rec.Err(), "recorder")
	assert.NoError(t, report.Err(), "checks C1–C5")
	t.Logf("faults that began and healed, as the checker counted them: %s", faultCounts(report.Faults, nil))

	// Phase B: stale writes refused, and every resumed holder told.
	staleHolds := map[string]bool{}
	for _, f := range report.Stale {
		staleHolds[f.Hold] = true
	}
	staleWrites := 0
	paused := map[string]bool{} // the holds the nemesis paused
	told := map[string]bool{}   // the holds whose holder saw Done closed
	// A pause is recorded before its SIGSTOP: a hold whose exit is stamped
	// before the pause's heal was sent before the stop took effect, and
	// the holder had left its critical section, having seen its validity
	// still running.
	// The nemesis picks a hold it saw inside its critical section, and the
	// hold may have left it, and its exit been recorded, before the pause
	// was: whatever the order, an exit recorded before the heal left first.
	exited, healed := map[string]int64{}, map[string]int64{}
	for _, e := range history {
		switch {
		case e.Kind == safety.KindNemesis && e.What == "pause":
			paused[e.Hold] = true
		case e.Kind == safety.KindHeal && e.What == "pause":
			healed[e.Hold] = e.T
		case e.Kind == safety.KindExit:
			exited[e.Hold] = e.T
		}
	}
	for hold := range paused {
		if at, ok := exited[hold]; ok && (healed[hold] == 0 || at < healed[hold]) {
			delete(paused, hold) // it left before the stop took effect
		}
	}
	for _, e := range history {
		switch {
		case e.Kind == safety.KindLost:
			told[e.Hold] = true
		case e.Kind == safety.KindDone:
			assert.Empty(t, e.Err, "hold %s outlived its validity", e.Hold)
			told[e.Hold] = e.Err == ""
		case e.Kind == safety.KindWriteRejected && staleHolds[e.Hold] && e.T >= phaseBStart && e.T <= phaseBEnd:
			staleWrites++
		}
	}
	resumed := 0
	for hold := range paused {
		if assert.True(t, told[hold], "hold %s was paused past its validity, and its holder never saw Done closed", hold) {
			resumed++
		}
	}
	if p.phaseB > 0 && len(processes) > 0 {
		assert.GreaterOrEqual(t, staleWrites, p.minStaleWritesRefused, "phase B proved nothing: too few stale writes refused")
		t.Logf("phase B: %d stale writes refused by fencing, %d of %d paused holders saw Done", staleWrites, resumed, len(paused))
	}

	// Phase C: every canary detected.
	canaryViolations := 0
	t.Logf("phase C: violations found per canary: %v", report.CanaryViolations)
	for name, count := range report.CanaryViolations {
		canaryViolations += count
		assert.GreaterOrEqual(t, count, 1, "canary %s: the checker did not detect the violation", name)
	}
	if kit != nil {
		assert.Equal(t, kit.runs, len(report.CanaryViolations), "canaries run and checked")
	}

	// The semaphore's permits and the read/write lock were held, and C7
	// and C1 counted them.
	permitHolds, readHolds, writeHolds, fairHolds, leaderships := 0, 0, 0, 0, 0
	for _, e := range history {
		switch {
		case e.Kind != safety.KindAcquireOK:
		case strings.HasPrefix(e.Key, chaosSemaphore+":permit:"):
			permitHolds++
		case e.Key == chaosReadWrite+safety.ReadersKeySuffix:
			readHolds++
		case e.Key == chaosReadWrite:
			writeHolds++
		case e.Key == chaosFair:
			fairHolds++
		case e.Key == chaosElection:
			leaderships++
		}
	}
	if p.semaphoreLimit > 0 {
		assert.Positive(t, permitHolds, "no permit of the semaphore was held")
	}
	if p.readWrite {
		assert.Positive(t, readHolds, "no read hold of the read/write lock")
		assert.Positive(t, writeHolds, "no write hold of the read/write lock")
	}
	if p.fair {
		assert.Positive(t, fairHolds, "no hold of the fair lock")
	}
	if p.election {
		assert.Positive(t, leaderships, "no leadership of the election")
	}

	// Callers with short contexts: both kinds of context error seen, and
	// every call that its context ended failed with the context's error.
	short := countShortCalls(history)
	t.Logf("short contexts: %s", short)
	if p.impatient > 0 {
		assert.Positive(t, short.calls, "no call had a short context")
		assert.Positive(t, short.deadline, "no call with a short context ended with context.DeadlineExceeded")
		assert.Positive(t, short.canceled, "no call with a short context ended with context.Canceled")
		if len(short.unmatched) > 0 {
			t.Errorf("%d of the %d calls that their context ended returned an error that does not match the context's error (%s); the first:\n%s",
				len(short.unmatched), short.ended, countsText(short.unmatchedBy), strings.Join(short.unmatched[:min(len(short.unmatched), 10)], "\n"))
		}
	}

	// C5 (c): attempt latency without faults, in steady state.
	checkAttemptLatency(t, observer, floorLatencies, firstContact, p.latencyLimit)

	// C6: hygiene.
	time.Sleep(time.Until(lastRelease.Add(p.ttl + time.Second)))
	assert.Empty(t, c.leftoverLocks(t), "C6: lock keys left on the nodes after TTL+1s")
	if got := safety.Goroutines(goroutines, 10*time.Second); got > goroutines {
		t.Errorf("C6: %d goroutines after the clients closed, %d before\n%s", got, goroutines, safety.GoroutineDump())
	}
	if got, err := safety.Descriptors(descriptors, 10*time.Second); assert.NoError(t, err) {
		assert.LessOrEqual(t, got, descriptors, "C6: file descriptors after the clients closed")
	}

	figures := runFigures{seed: seed, holds: report.Holds, faults: n.faults + kit.runsOrZero(),
		canaryViolations: canaryViolations, staleWrites: staleWrites,
		shortCalls: short.calls, contextErrors: short.deadline + short.canceled, duration: time.Since(started)}
	summary := fmt.Sprintf("chaos run: seed %d, holds %d (%d of them permits of a semaphore of %d, %d read and %d write holds of a read/write lock, %d of a fair lock, %d leaderships of an election), faults injected %d (%s), violations found in phase C %d, stale writes refused in phase B %d, stale holds %d, writes refused %d, calls with short contexts %d, of which ended with a context error %d, duration %v",
		figures.seed, figures.holds, permitHolds, p.semaphoreLimit, readHolds, writeHolds, fairHolds, leaderships, figures.faults, faultCounts(n.counts, kit), figures.canaryViolations, figures.staleWrites,
		len(report.Stale), report.WritesRejected, figures.shortCalls, figures.contextErrors, figures.duration.Round(time.Second))
	t.Log(summary)
	for _, f := range report.Fences {
		t.Logf("C2 (expected %q): %s", f.Expected, f)
	}
	return figures
}

// probe is C5(a): with the faults healed for 3 TTLs, each key is acquired
// within 2·TTL plus the largest retry delay, by a client that talks to the
// nodes directly.
func probe(t *testing.T, c *cluster, rec *safety.Recorder, keys []string, ttl time.Duration) {
	client, err := redlock.New(c.addresses(), redlock.Options{})
	require.NoError(t, err)
	defer client.Close()
	for _, key := range keys {
		m := client.NewMutex(key, redlock.MutexOptions{TTL: ttl, Fencing: true})
		ctx, cancel := context.WithTimeout(context.Background(), 4*ttl)
		start := time.Now()
		err := m.Lock(ctx)
		cancel()
		e := safety.Event{Kind: safety.KindProbe, Key: key, Latency: int64(time.Since(start))}
		if err != nil {
			e.Err = err.Error()
		} else {
			unlockContext, cancel := context.WithTimeout(context.Background(), time.Second)
			if err := m.Unlock(unlockContext); err != nil {
				e.Err = "unlock: " + err.Error()
			}
			cancel()
		}
		rec.Record(e)
	}
}

// smokeProfile is the chaos run of the plain test command: phase A only,
// 2 keys, 8 workers (one per client with short contexts), fewer faults,
// about 20 seconds. Its phase A has time for five to seven faults, not
// all eight of its list: F24 comes first, so that a SCRIPT FLUSH meets the
// callers with short contexts in every run.
func smokeProfile() profile {
	p := profile{ttl: time.Second, keys: 2, semaphoreLimit: 2, readWrite: true, fair: true, election: true, localClients: 4, localGoroutines: 2, longChance: 0.02, impatient: 1,
		warmup: 2 * time.Second, phaseA: 12 * time.Second, faults: smokeFaults, firstFaults: []fault{scriptFlush},
		latencyLimit: 100 * time.Millisecond}
	if raceEnabled {
		p.ttl, p.latencyLimit = 2*time.Second, 250*time.Millisecond
	}
	return p
}

// TestChaosSmoke is the short chaos run of RELIABILITY.md §8.4's gating:
// phase A with the cheaper faults, zero violations allowed. The build tag
// chaos runs the full TestChaos instead.
func TestChaosSmoke(t *testing.T) {
	if fullChaos {
		t.Skip("the build tag chaos runs the full TestChaos, which covers this run")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	runChaos(t, smokeProfile())
}
