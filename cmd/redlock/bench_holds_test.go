package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// bench --holds takes the holds, keeps them through a renewal and reports
// what it measured.
func TestBenchHoldsShortRun(t *testing.T) {
	_, addresses := startNodes(t, 3, redistest.Options{})
	// A renewal comes a third of the TTL after each hold was taken: 2 s
	// into a 3 s keep. A generous node timeout: timeouts are not what this
	// tests.
	result := invoke(t, map[string]string{addressesVariable: addresses}, "bench", "--holds", "50", "--ttl", "6s",
		"--duration", "3s", "--node-timeout", "1s", "--json")
	require.Equal(t, exitOK, result.status, result.stderr)
	var report holdsResult
	require.NoError(t, json.Unmarshal([]byte(result.stdout), &report), result.stdout)
	assert.Equal(t, "holds", report.Mode)
	assert.Equal(t, 50, report.Holds)
	assert.Equal(t, 3, report.Nodes)
	assert.Equal(t, 6000.0, report.TTL)
	assert.Positive(t, report.Renewals)
	assert.GreaterOrEqual(t, report.CommandsPerRenewal, 1.0, "a renewal sends a command per node")
	assert.Positive(t, report.BytesPerHold)
	assert.Zero(t, report.Lost)
	assert.Contains(t, result.stderr, "50 holds", "a progress line")
}
