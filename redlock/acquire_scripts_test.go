package redlock

import (
	"testing"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The acquisition scripts, run by a plain client against miniredis (see
// scriptClient in scripts_test.go).

func TestAcquireMultiScript(t *testing.T) {
	tests := []struct {
		name      string
		states    []setupState
		want      any // "OK", or the longest remaining TTL of the keys that exist
		wrongType bool
	}{
		{name: "free", states: []setupState{stateMissing, stateMissing, stateMissing}, want: "OK"},
		{name: "expired", states: []setupState{stateExpired, stateMissing}, want: "OK"},
		{name: "held by another", states: []setupState{stateMissing, stateOther, stateMissing}, want: int64(10000)},
		{name: "held by us", states: []setupState{stateMissing, stateOurs}, want: int64(10000)},
		{name: "last key held by another", states: []setupState{stateMissing, stateMissing, stateOther}, want: int64(10000)},
		{name: "a key without TTL", states: []setupState{stateMissing, statePersistent}, want: int64(-1)},
		{name: "wrong type", states: []setupState{stateMissing, stateWrongType, stateMissing}, wrongType: true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			server, client := scriptServer(t)
			keys := lockKeys(len(test.states))
			for i, state := range test.states {
				prepare(t, server, client, keys[i], state)
			}
			reply := client.eval(t, protocol.AcquireMulti.Source(), keys, ourToken, "10000")
			if test.wrongType {
				assertWrongType(t, reply)
			} else {
				assert.Equal(t, test.want, reply)
			}
			for i, key := range keys {
				switch {
				case test.want == "OK" && !test.wrongType:
					value, err := server.Get(key)
					require.NoError(t, err)
					assert.Equal(t, ourToken, value)
					assert.Equal(t, 10*time.Second, server.TTL(key))
				case test.states[i] == stateMissing || test.states[i] == stateExpired:
					// A refused or failed call leaves nothing behind.
					assert.False(t, server.Exists(key), "key %s", key)
				default:
					// A key that existed before is left as it was.
					assert.True(t, server.Exists(key), "key %s", key)
				}
			}
		})
	}
}

func TestAcquireWaitingScript(t *testing.T) {
	tests := []struct {
		name  string
		state setupState
		want  any // "OK", or the remaining TTL of the key that exists
	}{
		{name: "free", state: stateMissing, want: "OK"},
		{name: "expired", state: stateExpired, want: "OK"},
		{name: "held by another", state: stateOther, want: int64(10000)},
		{name: "held by us", state: stateOurs, want: int64(10000)},
		{name: "held without a TTL", state: statePersistent, want: int64(-1)},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			server, client := scriptServer(t)
			prepare(t, server, client, "lock:0", test.state)
			assert.Equal(t, test.want, client.eval(t, protocol.AcquireWaiting.Source(), []string{"lock:0"}, ourToken, "5000"))
			if test.want == "OK" {
				value, err := server.Get("lock:0")
				require.NoError(t, err)
				assert.Equal(t, ourToken, value)
				assert.Equal(t, 5*time.Second, server.TTL("lock:0"))
			}
		})
	}
}

// A refused fenced acquisition tells how long the node will refuse: the
// longest remaining TTL of the lock keys that exist.
func TestAcquireFencedScriptRefusalTellsTheRemainingTTL(t *testing.T) {
	server, client := scriptServer(t)
	require.Equal(t, "OK", client.do(t, "SET", "lock:1", otherToken, "PX", "7000"))
	require.Equal(t, "OK", client.do(t, "SET", "lock:2", otherToken, "PX", "3000"))
	keys := []string{"lock:0", "lock:1", "lock:2", "lock:0" + fenceKeySuffix, "lock:1" + fenceKeySuffix, "lock:2" + fenceKeySuffix}
	assert.Equal(t, int64(7000), client.eval(t, protocol.AcquireFenced.Source(), keys, ourToken, "10000"))
	assert.False(t, server.Exists("lock:0"), "the key the call set is deleted again")

	require.Equal(t, int64(1), client.do(t, "PERSIST", "lock:2"))
	assert.Equal(t, int64(-1), client.eval(t, protocol.AcquireFenced.Source(), keys, ourToken, "10000"), "a key without a TTL")
}
