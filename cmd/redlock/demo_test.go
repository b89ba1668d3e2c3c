package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

func TestDemoShortRun(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		servers string
		events  string
		// quarantine is the report's line about it.
		quarantine string
		realOnly   bool
	}{
		{name: "redis-server", args: []string{"demo", "--duration", "3s"}, servers: "redis-server processes", realOnly: true,
			events: "restarted empty, as after a restart without persistence", quarantine: `ok\s+quarantine\s+each node restarted voted again only after the TTL: [1-9]`},
		{name: "embedded", args: []string{"demo", "--duration", "3s", "--embedded"}, servers: "embedded miniredis servers in this process (as asked)",
			events: "closed, its data removed", quarantine: `ok\s+quarantine\s+each node restarted voted again only after the TTL: [1-9]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.realOnly {
				redistest.RequireReal(t)
			}
			result := invoke(t, nil, tt.args...)
			assert.Equal(t, exitOK, result.status, "stdout:\n%s\nstderr:\n%s", result.stdout, result.stderr)
			assert.Contains(t, result.stderr, tt.servers)
			assert.Contains(t, result.stderr, tt.events)
			assert.Contains(t, result.stdout, "every check held")
			assert.Regexp(t, `ok\s+acquisitions\s+[1-9]\d* holds`, result.stdout)
			assert.Regexp(t, `ok\s+counter`, result.stdout)
			assert.Regexp(t, `(ok|skipped)\s+fences`, result.stdout)
			assert.Contains(t, result.stdout, "lock wait      p50 ")
			assert.Regexp(t, tt.quarantine, result.stdout)
		})
	}
}

func TestDemoOnGivenNodes(t *testing.T) {
	_, addresses := startNodes(t, 3, redistest.Options{})
	result := invoke(t, map[string]string{addressesVariable: addresses}, "demo", "--duration", "1s", "--workers", "3")
	assert.Equal(t, exitOK, result.status, "stdout:\n%s\nstderr:\n%s", result.stdout, result.stderr)
	assert.Contains(t, result.stderr, "3 nodes given with --addrs, left alone")
	assert.NotContains(t, result.stdout, "node events")
}

func TestBenchShortRun(t *testing.T) {
	_, addresses := startNodes(t, 3, redistest.Options{})
	for _, mode := range []string{"serial", "concurrent"} {
		t.Run(mode, func(t *testing.T) {
			// A generous node timeout: in-process servers under the race
			// detector answer slowly, and timeouts are not what this tests.
			result := invoke(t, map[string]string{addressesVariable: addresses}, "bench", "--mode", mode, "--duration", "500ms", "--node-timeout", "2s", "--json")
			require.Equal(t, exitOK, result.status, result.stderr)
			var report benchResult
			require.NoError(t, json.Unmarshal([]byte(result.stdout), &report), result.stdout)
			assert.Equal(t, mode, report.Mode)
			assert.Equal(t, 3, report.Nodes)
			assert.Positive(t, report.Cycles)
			assert.Zero(t, report.Errors, report.FirstError)
			assert.Equal(t, report.Cycles, report.Cycle.Count)
			assert.LessOrEqual(t, report.Cycle.P50, report.Cycle.P99)
			assert.LessOrEqual(t, report.Cycle.P99, report.Cycle.Maximum)
			assert.Contains(t, result.stderr, "bench ", "a progress line")
		})
	}
	t.Run("embedded servers", func(t *testing.T) {
		result := invoke(t, nil, "bench", "--embedded", "--nodes", "3", "--workers", "4", "--keys", "2", "--duration", "500ms")
		require.Equal(t, exitOK, result.status, result.stderr)
		assert.Contains(t, result.stderr, "started 3 embedded miniredis servers")
		assert.Contains(t, result.stdout, "bench: concurrent, 4 workers on 2 keys, 3 nodes (miniredis)")
		assert.Regexp(t, `cycle\s+p50 \S+\s+p90 \S+\s+p99 \S+\s+max \S+`, result.stdout)
	})
}

func TestFencedStore(t *testing.T) {
	var store fencedStore
	assert.True(t, store.write(3, 1))
	assert.True(t, store.write(5, 2))
	assert.False(t, store.write(4, 3), "a write with an older fence is refused")
	assert.True(t, store.write(5, 3), "the same fence again is accepted, and counted")
	state := store.state()
	assert.Equal(t, storeState{value: 3, lastFence: 5, firstFence: 3, accepted: 3, rejected: 1, repeated: 1}, state)
}

func TestWorkerKeys(t *testing.T) {
	assert.Equal(t, []int{0, 4, 8}, workerKeys(0, 4, 10))
	assert.Equal(t, []int{3, 7}, workerKeys(3, 4, 10))
	assert.Equal(t, []int{1}, workerKeys(3, 4, 2), "fewer keys than workers: shared")
	assert.Equal(t, []int{0}, workerKeys(5, 8, 1))
}
