//go:build linux

package safety_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/safety"
	"github.com/lockmux/lockmux/internal/workgroup"
)

// The deterministic scenarios of RELIABILITY.md §8.5 that exercise the
// checker end to end: D1, D4 and D15 are canaries whose violation the
// checker must find, D3 is a pause that fencing must make harmless.

// canaryCluster starts five nodes, under the clock shim when clock is set
// (skipping the test without gcc), a recorder and a canary kit.
func canaryCluster(t *testing.T, clock bool) (*cluster, *safety.Recorder, *canaryKit) {
	shim := ""
	if clock {
		var reason string
		if shim, reason = buildShim(t); shim == "" {
			t.Skip(reason)
		}
	}
	c := startCluster(t, clusterOptions{nodes: 5, shim: shim})
	rec := safety.NewRecorder()
	t.Cleanup(func() { rec.Close() })
	return c, rec, newCanaryKit(t, c, rec, "lock:canary", nil)
}

// checkCanary runs the checker on the kit's history.
func checkCanary(t *testing.T, c *cluster, rec *safety.Recorder) *safety.Report {
	report := safety.Check(rec.History(), safety.Options{Resource: c.resourceLog(t, []string{"lock:canary"})})
	require.NoError(t, report.Err(), "every finding of a canary is expected")
	return report
}

// TestD1ClockJump: client 1 holds A, B, C; C's clock jumps past
// the TTL; client 2 takes C, D, E. The checker must report the violation,
// and fencing must refuse client 1's later write.
func TestD1ClockJump(t *testing.T) {
	c, rec, kit := canaryCluster(t, true)
	kit.clockJump()
	report := checkCanary(t, c, rec)
	assert.GreaterOrEqual(t, report.CanaryViolations["clock-jump#1"], 1, "the checker did not detect the violation")
	assert.Equal(t, 1, kit.refused, "fencing must refuse the first holder's write after the second's")
	assert.Zero(t, kit.regressions, "the counters survive a clock jump")
}

// TestD4ImmediateRestart: client 1 holds A, B, C; C restarts at once with
// no data; client 2 takes C, D, E. The checker must report the violation.
// The fence may regress (C lost its counter): that is reported, not
// failed.
func TestD4ImmediateRestart(t *testing.T) {
	c, rec, kit := canaryCluster(t, false)
	kit.restart()
	report := checkCanary(t, c, rec)
	assert.GreaterOrEqual(t, report.CanaryViolations["restart#1"], 1, "the checker did not detect the violation")
	t.Logf("fence regressions: %d (documented for F2), first holder's writes refused: %d", kit.regressions, kit.refused)
}

// TestElectionRestartCanary: as D4 for an election, which is a renewed,
// fenced lock: client 1 leads with A, B, C; C restarts at once with no
// data; client 2 leads with C, D, E. The checker must report the two
// leaderships overlapping.
func TestElectionRestartCanary(t *testing.T) {
	c, rec, kit := canaryCluster(t, false)
	kit.electionRestart()
	report := checkCanary(t, c, rec)
	assert.GreaterOrEqual(t, report.CanaryViolations["election-restart#1"], 1, "the checker did not detect the overlap")
}

// TestD15DriftFactorBoundary: the clocks of A, B and C run fast. At rate
// 1.005 the drift allowance (1% + 2 ms) covers it and the holds never
// overlap; at 1.05 it does not, and the checker must report the overlap.
func TestD15DriftFactorBoundary(t *testing.T) {
	for _, test := range []struct {
		name      string
		rate      float64
		violation bool
	}{
		{name: "within the drift factor", rate: 1.005, violation: false},
		{name: "beyond the drift factor", rate: 1.05, violation: true},
	} {
		t.Run(test.name, func(t *testing.T) {
			c, rec, kit := canaryCluster(t, true)
			kit.drift(test.rate)
			report := safety.Check(rec.History(), safety.Options{Resource: c.resourceLog(t, []string{"lock:canary"})})
			require.Len(t, report.CanaryViolations, 1)
			for name, count := range report.CanaryViolations {
				if test.violation {
					assert.GreaterOrEqual(t, count, 1, "%s: the checker did not detect the violation", name)
				} else {
					assert.Zero(t, count, "%s: a drift within the drift factor must not break mutual exclusion: %v", name, report.Violations)
				}
			}
		})
	}
}

// TestD3PauseInCriticalSection: a worker process is stopped with SIGSTOP
// inside its critical section, before its write, until its lock expired
// and another holder wrote with a newer fence. When it resumes, its write
// must be refused, and it must find Done closed.
func TestD3PauseInCriticalSection(t *testing.T) {
	ttl := time.Second
	if raceEnabled {
		ttl = 2 * time.Second
	}
	c := startCluster(t, clusterOptions{nodes: 5})
	rec := safety.NewRecorder()
	socketDir, err := os.MkdirTemp("", "safety")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(socketDir) })
	socket := filepath.Join(socketDir, "recorder.sock")
	require.NoError(t, rec.Listen(socket))
	t.Cleanup(func() { rec.Close() })
	rec.SetPhase(safety.PhasePause)

	config := workerConfig{Keys: []string{"lock:d3"}, Resource: c.resource.Addr(), TTL: ttl, NodeTimeout: 50 * time.Millisecond,
		RetryMin: 10 * time.Millisecond, RetryMax: 60 * time.Millisecond, AcquireTimeout: 2 * ttl, Socket: socket, Lifetime: time.Minute}
	paused := config
	paused.Name, paused.Goroutines, paused.Addresses = "p1", 1, c.addresses()
	process := startWorkerProcess(t, paused)
	contender := config
	contender.Name, contender.Goroutines, contender.Addresses = "local1", 1, c.addresses()
	var workers workgroup.Group
	workers.Go(func() error { return runWorkers(context.Background(), contender, rec, nil) })

	tr := newTracker(rec)
	var target safety.Event
	found := false
	for end := time.Now().Add(10 * time.Second); !found && time.Now().Before(end); time.Sleep(time.Millisecond) {
		target, found = tr.insideUnwritten("p1")
	}
	require.True(t, found, "the worker process never entered its critical section")
	rec.Record(safety.Event{Kind: safety.KindNemesis, What: "pause", Worker: "p1", Hold: target.Hold, Key: target.Key})
	require.NoError(t, process.signal(syscall.SIGSTOP))
	time.Sleep(ttl + ttl/5)
	for end := time.Now().Add(5 * ttl); tr.newest[target.Key] <= tr.fences[target.Hold] && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		tr.update()
	}
	require.Greater(t, tr.newest[target.Key], tr.fences[target.Hold], "no other holder wrote while the process was stopped")
	require.NoError(t, process.signal(syscall.SIGCONT))
	rec.Record(safety.Event{Kind: safety.KindHeal, What: "pause", Worker: "p1", Hold: target.Hold, Key: target.Key})
	for end := time.Now().Add(5 * ttl); !tr.exited[target.Hold] && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		tr.update()
	}
	require.True(t, tr.exited[target.Hold], "the resumed holder never left its critical section")

	rec.SetPhase(safety.PhaseStop)
	require.NoError(t, workers.Wait())
	require.NoError(t, process.wait(10*time.Second))

	report := safety.Check(rec.History(), safety.Options{Resource: c.resourceLog(t, config.Keys)})
	require.NoError(t, report.Err())
	require.NoError(t, rec.Err())
	assert.GreaterOrEqual(t, report.StaleWritesRejected, 1, "the stale write must be refused by fencing")
	if assert.Contains(t, tr.done, target.Hold, "the resumed holder must wait for Done") {
		assert.Empty(t, tr.done[target.Hold].Err, "the resumed holder must find Done closed")
	}
	stale := false
	for _, f := range report.Stale {
		stale = stale || f.Hold == target.Hold
	}
	assert.True(t, stale, "the checker must find the paused hold stale: %v", report.Stale)
}
