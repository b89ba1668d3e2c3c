package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// doctorBoth runs doctor with args as text and as JSON, requires the same
// exit status of both, and returns the JSON's.
func doctorBoth(t *testing.T, variables map[string]string, want int, args ...string) object {
	t.Helper()
	text := invoke(t, variables, append([]string{"doctor"}, args...)...)
	require.Equal(t, want, text.status, "text: %s%s", text.stdout, text.stderr)
	asJSON := invoke(t, variables, append([]string{"doctor", "--json"}, args...)...)
	require.Equal(t, want, asJSON.status, "--json changes no exit status: %s", asJSON.stderr)
	return decodeJSON(t, asJSON)
}

// findingsByCheck returns a node's findings by their check's name.
func findingsByCheck(t *testing.T, node object) map[string]object {
	t.Helper()
	findings := map[string]object{}
	for _, finding := range list(t, node, "findings") {
		findings[finding["check"].(string)] = finding
	}
	return findings
}

func TestDoctorJSON(t *testing.T) {
	redistest.RequireReal(t)
	servers, addresses := startNodes(t, 3, redistest.Options{})

	t.Run("warnings only", func(t *testing.T) {
		result := doctorBoth(t, map[string]string{addressesVariable: addresses}, exitOK)
		assert.Equal(t, true, result["complete"])
		assert.Equal(t, "", result["error"])
		assert.Equal(t, []any{}, result["notes"], "three nodes: nothing to note")
		assert.Equal(t, 0.0, result["failures"])
		assert.Greater(t, result["warnings"], 0.0, "no persistence")
		nodes := list(t, result, "nodes")
		require.Len(t, nodes, 3)
		first := nodes[0]
		assert.Equal(t, servers[0].Addr(), first["address"])
		assert.Regexp(t, `^\d+\.\d+\.\d+$`, first["redis_version"])
		assert.Regexp(t, `^[0-9a-f]{40}$`, first["run_id"])
		assert.Equal(t, "warn", first["severity"])
		offset, ok := first["clock_offset_ms"].(float64)
		require.True(t, ok, "a number: %v", first["clock_offset_ms"])
		assert.Less(t, offset, 1000.0, "the same host's clock")
		findings := findingsByCheck(t, first)
		assert.Equal(t, "warn", findings["persistence"]["severity"])
		assert.Contains(t, findings["persistence"]["message"], "appendonly no")
		assert.Equal(t, "ok", findings["run_id"]["severity"])

		counted := 0.0
		for _, node := range nodes {
			counted += float64(len(list(t, node, "findings")))
		}
		assert.Equal(t, counted, result["ok"].(float64)+result["warnings"].(float64)+result["failures"].(float64),
			"the counts are of the findings")

		strict := doctorBoth(t, map[string]string{addressesVariable: addresses}, exitFailed, "--strict")
		assert.Equal(t, true, strict["complete"], "--strict changes the exit status only")
	})
	t.Run("failures and an even number of nodes", func(t *testing.T) {
		port := servers[0].Addr()[strings.LastIndexByte(servers[0].Addr(), ':')+1:]
		closed := redistest.ClosedAddress(t)
		variables := map[string]string{addressesVariable: servers[0].Addr() + ",localhost:" + port + "," + closed + "," + servers[1].Addr()}
		result := doctorBoth(t, variables, exitFailed)
		assert.Greater(t, result["failures"], 0.0)
		notes, ok := result["notes"].([]any)
		require.True(t, ok, "an array: %v", result["notes"])
		require.Len(t, notes, 1)
		assert.Contains(t, notes[0], "4 nodes tolerate no more failures than 3 would")
		nodes := list(t, result, "nodes")
		require.Len(t, nodes, 4)
		assert.Equal(t, "fail", nodes[1]["severity"])
		assert.Contains(t, findingsByCheck(t, nodes[1])["run_id"]["message"], "the same server")
		unreachable := nodes[2]
		assert.Equal(t, closed, unreachable["address"])
		assert.Equal(t, "fail", unreachable["severity"])
		assert.Equal(t, "", unreachable["redis_version"])
		assert.Nil(t, unreachable["clock_offset_ms"], "its clock was not read")
		findings := list(t, unreachable, "findings")
		require.Len(t, findings, 1)
		assert.Equal(t, object{"check": "reachable", "severity": "fail", "message": findings[0]["message"]}, findings[0])
		assert.Contains(t, findings[0]["message"], "cannot reach the node")
	})
	t.Run("bad usage prints no JSON", func(t *testing.T) {
		result := invoke(t, nil, "doctor", "--json")
		assert.Equal(t, exitUsage, result.status)
		assert.Empty(t, result.stdout)
	})
}
