//go:build chaos && linux

package safety_test

import (
	"slices"
	"testing"
	"time"
)

// fullChaos is set by the build tag chaos, which runs the full TestChaos.
const fullChaos = true

// TestChaos is the full chaos run of RELIABILITY.md §8.4, about two
// minutes on two cores: go test -tags chaos -run Chaos -count=1
// ./internal/safety/. Phase A injects the faults that must be survived,
// while one goroutine of each in-process client makes some of its calls
// with contexts of 2 ms or less, and allows no violation; phase B stops
// worker processes inside their critical section and requires fencing to
// refuse every stale write; phase C runs the documented-unsafe canaries
// and requires the checker to detect each; then liveness (C5) and hygiene
// (C6) after healing. The workers' clients quarantine the nodes that may
// have lost keys (redlock.Options.Quarantine), so phase A also restarts
// nodes at once without their data (F2), flushes a node that stays up
// (F35), and promotes a replica that
// missed writes behind the last node's address (F34), which phase C's
// restart canary shows unsafe without the quarantine. The clients' sixth
// node is a Redis Cluster member of three masters with replicas: phase A
// begins by moving the slot of a lock during the load (F25) and crashing
// a master of a lock's slot so that its replica is promoted (F36), and
// the run fails unless the checker saw both begin and heal.
func TestChaos(t *testing.T) {
	p := profile{ttl: time.Second, keys: 4, semaphoreLimit: 2, readWrite: true, fair: true, election: true, quarantine: true, replica: true, member: true,
		localClients: 4, localGoroutines: 3, processes: 4, processGoroutines: 2,
		longChance: 0.02, impatient: 1, warmup: 5 * time.Second, phaseA: 45 * time.Second,
		firstFaults: []fault{slotMove, memberCrash}, faults: append(slices.Clone(mustSurvive), restartAtOnceEmpty, flush, failover, slotMove, memberCrash),
		phaseB: 35 * time.Second, canaries: 3, latencyLimit: 100 * time.Millisecond, minStaleWritesRefused: 5}
	if raceEnabled {
		p.ttl, p.localGoroutines, p.processGoroutines, p.latencyLimit = 2*time.Second, 2, 1, 250*time.Millisecond
	}
	runChaos(t, p)
}
