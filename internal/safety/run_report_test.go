//go:build linux

package safety_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockmux/lockmux/internal/safety"
)

// What a chaos run reports: the faults it injected, and the artifacts of
// a failed run.

// runsOrZero returns the number of canary scenarios run.
func (k *canaryKit) runsOrZero() int {
	if k == nil {
		return 0
	}
	return k.runs
}

// faultNames returns the names of faults.
func faultNames(faults []fault) []string {
	var names []string
	for _, f := range faults {
		names = append(names, f.name)
	}
	return names
}

// faultCounts lists the faults injected by name.
func faultCounts(counts map[string]int, kit *canaryKit) string {
	var names []string
	for name, count := range counts {
		names = append(names, fmt.Sprintf("%s ×%d", name, count))
	}
	slices.Sort(names)
	if kit != nil && kit.runs > 0 {
		names = append(names, fmt.Sprintf("phase C canaries ×%d", kit.runs))
	}
	return strings.Join(names, "; ")
}

// dumpOnFailure writes the history and the nodes' logs of a failed run to
// $TMPDIR/chaos-SEED-*, and names the directory.
func dumpOnFailure(t *testing.T, seed uint64, rec *safety.Recorder, c *cluster) {
	if !t.Failed() {
		return
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("chaos-%d-", seed))
	if err != nil {
		t.Logf("cannot keep the artifacts: %v", err)
		return
	}
	file, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err == nil {
		err = safety.WriteJSONL(file, rec.History())
		file.Close()
	}
	if err != nil {
		t.Logf("cannot write the history: %v", err)
	}
	for i, node := range c.nodes {
		_ = os.WriteFile(filepath.Join(dir, "redis-"+nodeNames[i]+".log"), []byte(node.LogTail(2000)), 0o644)
	}
	if c.member != nil {
		for _, server := range c.member.Servers() {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("redis-%s-%d.log", memberName, server.Port())), []byte(server.LogTail(2000)), 0o644)
		}
	}
	t.Logf("artifacts of the failed run (seed %d): %s", seed, dir)
}
