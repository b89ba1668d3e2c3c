package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// object is a JSON object as a script reads it: the names as printed,
// numbers as float64.
type object = map[string]any

// decodeJSON parses what a command printed with --json: one JSON object
// on one line.
func decodeJSON(t *testing.T, result invocation) object {
	t.Helper()
	require.Equal(t, 1, strings.Count(result.stdout, "\n"), "one line: %s; stderr: %s", result.stdout, result.stderr)
	var decoded object
	require.NoError(t, json.Unmarshal([]byte(result.stdout), &decoded), result.stdout)
	return decoded
}

// list returns the objects of the array name of o.
func list(t *testing.T, o object, name string) []object {
	t.Helper()
	array, ok := o[name].([]any)
	require.True(t, ok, "%q is an array: %v", name, o[name])
	objects := make([]object, len(array))
	for i, element := range array {
		objects[i], ok = element.(object)
		require.True(t, ok, "%q[%d] is an object: %v", name, i, element)
	}
	return objects
}

// statusBoth runs status with args as text and as JSON, requires the same
// exit status of both, and returns the JSON's.
func statusBoth(t *testing.T, variables map[string]string, want int, args ...string) object {
	t.Helper()
	text := invoke(t, variables, append([]string{"status"}, args...)...)
	require.Equal(t, want, text.status, "text: %s%s", text.stdout, text.stderr)
	asJSON := invoke(t, variables, append([]string{"status", "--json"}, args...)...)
	require.Equal(t, want, asJSON.status, "--json changes no exit status: %s", asJSON.stderr)
	return decodeJSON(t, asJSON)
}

func TestStatusJSONOfALock(t *testing.T) {
	servers, addresses := startUntrustedNodes(t, 5, redistest.Options{})
	variables := map[string]string{addressesVariable: addresses}
	for i, token := range []string{"aaaaaaaa-first host-1", "aaaaaaaa-first host-1", "aaaaaaaa-first host-1", "bbbbbbbb-second"} {
		require.Equal(t, "OK", servers[i].Do(t, "SET", "held", token, "PX", "60000"))
	}
	require.Equal(t, "OK", servers[0].Do(t, "SET", "held:lockmux-fence", "7"))
	require.Equal(t, "OK", servers[1].Do(t, "SET", "stuck", "cccccccc-forever"))
	for i, token := range []string{"dddddddd-one", "dddddddd-one", "eeeeeeee-two", "eeeeeeee-two"} {
		require.Equal(t, "OK", servers[i].Do(t, "SET", "split", token, "PX", "60000"))
	}

	t.Run("locked", func(t *testing.T) {
		status := statusBoth(t, variables, exitOK, "held")
		assert.Equal(t, "held", status["key"])
		assert.Equal(t, "locked", status["state"])
		assert.Equal(t, 3.0, status["quorum"])
		assert.Equal(t, 5.0, status["answered"])
		assert.Equal(t, "aaaaaaaa", status["token_prefix"])
		assert.Equal(t, 3.0, status["holders"])
		assert.Equal(t, "host-1", status["metadata"])
		assert.Equal(t, 0.0, status["waiting"])
		nodes := list(t, status, "nodes")
		require.Len(t, nodes, 5)
		first := nodes[0]
		assert.Equal(t, servers[0].Addr(), first["address"])
		assert.Equal(t, true, first["held"])
		assert.Equal(t, "aaaaaaaa", first["token_prefix"])
		assert.Equal(t, "host-1", first["metadata"])
		assert.InDelta(t, 60000, first["ttl_ms"], 30000, "a minute, less the time the test took")
		assert.Equal(t, false, first["persistent"])
		assert.Equal(t, 7.0, first["fence"])
		assert.Nil(t, first["epoch_age_ms"], "no epoch marker")
		assert.Equal(t, "", first["error"])
		assert.Equal(t, "bbbbbbbb", nodes[3]["token_prefix"])
		assert.Equal(t, false, nodes[4]["held"])
		assert.Equal(t, "", nodes[4]["token_prefix"])
		assert.Equal(t, 0.0, nodes[4]["ttl_ms"])
	})
	t.Run("free", func(t *testing.T) {
		status := statusBoth(t, variables, exitFailed, "nobody")
		assert.Equal(t, "free", status["state"])
		assert.Equal(t, "", status["token_prefix"])
		assert.Equal(t, 0.0, status["holders"])
	})
	t.Run("a key that never expires on one node", func(t *testing.T) {
		status := statusBoth(t, variables, exitFailed, "stuck")
		assert.Equal(t, "split", status["state"], "held, on one node of five")
		stuck := list(t, status, "nodes")[1]
		assert.Equal(t, true, stuck["persistent"])
		assert.Equal(t, 0.0, stuck["ttl_ms"])
	})
	t.Run("split", func(t *testing.T) {
		status := statusBoth(t, variables, exitFailed, "split")
		assert.Equal(t, "split", status["state"])
		assert.Equal(t, 2.0, status["holders"])
	})
	t.Run("unknown", func(t *testing.T) {
		down := strings.Join([]string{servers[0].Addr(), servers[1].Addr(), redistest.ClosedAddress(t), redistest.ClosedAddress(t),
			redistest.ClosedAddress(t)}, ",")
		status := statusBoth(t, map[string]string{addressesVariable: down}, exitUnavailable, "held")
		assert.Equal(t, "unknown", status["state"])
		assert.Equal(t, 2.0, status["answered"])
		nodes := list(t, status, "nodes")
		assert.Contains(t, nodes[2]["error"], "connection refused")
		assert.Nil(t, nodes[2]["epoch_age_ms"])
	})
	t.Run("bad usage prints no JSON", func(t *testing.T) {
		result := invoke(t, variables, "status", "--json")
		assert.Equal(t, exitUsage, result.status)
		assert.Empty(t, result.stdout)
	})
}

// The epoch markers' ages and a fair lock's line, as the text shows them.
func TestStatusJSONOfTheEpochsAndTheLine(t *testing.T) {
	redistest.RequireReal(t) // INFO in scripts
	servers, addresses := startNodes(t, 3, redistest.Options{})
	variables := map[string]string{addressesVariable: addresses}
	trusted := invoke(t, variables, "trust-nodes", "--force")
	require.Equal(t, exitOK, trusted.status, trusted.stderr)
	servers[2].Do(t, "DEL", "lockmux:epoch")
	future := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	for _, server := range servers {
		server.Do(t, "SET", "printer", "aaaaaaaa-holder", "PX", "60000")
		server.Do(t, "ZADD", "printer:queue", "1", "waiter-1", "2", "waiter-2")
		server.Do(t, "ZADD", "printer:alive", future, "waiter-1", future, "waiter-2")
	}

	status := statusBoth(t, variables, exitOK, "printer")
	assert.Equal(t, 2.0, status["waiting"])
	nodes := list(t, status, "nodes")
	assert.Equal(t, 2.0, nodes[0]["waiting"])
	age, ok := nodes[0]["epoch_age_ms"].(float64)
	require.True(t, ok, "a number: %v", nodes[0]["epoch_age_ms"])
	assert.GreaterOrEqual(t, age, 0.0)
	assert.Nil(t, nodes[2]["epoch_age_ms"], "no marker of this server process")
}

func TestStatusJSONOfASemaphore(t *testing.T) {
	servers, addresses := startNodes(t, 3, redistest.Options{})
	variables := map[string]string{addressesVariable: addresses}
	for _, server := range servers {
		server.Do(t, "SET", "exports:permit:0", "aaaaaaaa-first", "PX", "60000")
	}
	available := statusBoth(t, variables, exitFailed, "--semaphore", "2", "exports")
	assert.Equal(t, "exports", available["name"])
	assert.Equal(t, "available", available["state"])
	assert.Equal(t, 2.0, available["limit"])
	assert.Equal(t, 1.0, available["held"])
	permits := list(t, available, "permits")
	require.Len(t, permits, 2)
	assert.Equal(t, "exports:permit:0", permits[0]["key"])
	assert.Equal(t, "locked", permits[0]["state"])
	assert.Equal(t, "aaaaaaaa", permits[0]["token_prefix"])
	assert.Len(t, list(t, permits[0], "nodes"), 3)
	assert.Equal(t, "free", permits[1]["state"])

	for _, server := range servers {
		server.Do(t, "SET", "exports:permit:1", "bbbbbbbb-second", "PX", "60000")
	}
	full := statusBoth(t, variables, exitOK, "--semaphore", "2", "exports")
	assert.Equal(t, "full", full["state"])
	assert.Equal(t, 2.0, full["held"])

	down := servers[0].Addr() + "," + redistest.ClosedAddress(t) + "," + redistest.ClosedAddress(t)
	unknown := statusBoth(t, map[string]string{addressesVariable: down}, exitUnavailable, "--semaphore", "3", "exports")
	assert.Equal(t, "unknown", unknown["state"])
}

func TestStatusJSONOfAReadWriteLock(t *testing.T) {
	servers, addresses := startNodes(t, 3, redistest.Options{})
	variables := map[string]string{addressesVariable: addresses}
	future := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	past := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	for i, server := range servers {
		server.Do(t, "ZADD", "catalog:readers", future, "aaaaaaaa-reader", past, "bbbbbbbb-expired")
		if i < 1 {
			server.Do(t, "ZADD", "catalog:readers", future, "cccccccc-minority")
		}
	}
	read := statusBoth(t, variables, exitOK, "--rw", "catalog")
	assert.Equal(t, "catalog", read["name"])
	assert.Equal(t, "read", read["state"])
	assert.Equal(t, 1.0, read["read_holds"])
	writer, ok := read["writer"].(object)
	require.True(t, ok, "writer is an object: %v", read["writer"])
	assert.Equal(t, "catalog", writer["key"])
	assert.Equal(t, "free", writer["state"])
	readers := list(t, read, "readers")
	require.Len(t, readers, 3)
	assert.Equal(t, servers[0].Addr(), readers[0]["address"])
	assert.Equal(t, 2.0, readers[0]["count"], "live entries only")
	assert.Equal(t, 1.0, readers[1]["count"])
	assert.Equal(t, "", readers[1]["error"])

	for _, server := range servers {
		server.Do(t, "DEL", "catalog:readers")
		server.Do(t, "SET", "catalog", "dddddddd-writer", "PX", "60000")
	}
	written := statusBoth(t, variables, exitOK, "--rw", "catalog")
	assert.Equal(t, "written", written["state"])

	for _, server := range servers {
		server.Do(t, "DEL", "catalog")
	}
	free := statusBoth(t, variables, exitFailed, "--rw", "catalog")
	assert.Equal(t, "free", free["state"])

	down := servers[0].Addr() + "," + redistest.ClosedAddress(t) + "," + redistest.ClosedAddress(t)
	unknown := statusBoth(t, map[string]string{addressesVariable: down}, exitUnavailable, "--rw", "catalog")
	assert.Equal(t, "unknown", unknown["state"])
	unread := list(t, unknown, "readers")[1]
	assert.Equal(t, -1.0, unread["count"])
	assert.NotEmpty(t, unread["error"])
}
