package redlock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// A renewed hold watches its keys on every node that holds them, not only
// on the nodes whose confirmations decided the round: the round stops at
// a quorum, and with three nodes the third one's reply is mostly never
// awaited. Each of the six cuts, on the three nodes in turn, must make
// the hold renew at once; the renewal's schedule is ten seconds away.
func TestRenewedHoldWatchesEveryNodeThatHoldsIt(t *testing.T) {
	nodes, client, m, observer := watchedHold(t)
	for cut := range 6 {
		node := cut % len(nodes.servers)
		require.True(t, waitUntil(func() bool { return armingSettled(t, client, m) }),
			"before cut %d: the hold's key was not armed on every node it watches", cut+1)
		client.do(t, node, "PEXPIRE", "watched", "5000")
		select {
		case event := <-observer.extensions:
			require.NoError(t, event.Err, "the extension that answers cut %d", cut+1)
		case <-time.After(5 * time.Second):
			t.Fatalf("cut %d, on node %d, went unnoticed: no extension before the renewal's schedule", cut+1, node)
		}
	}
}

// armingSettled reports whether m's hold is armed on every node it
// watches: no own write is under way, and each node the hold watches
// tracks its key.
func armingSettled(t *testing.T, client *Client, m *Mutex) bool {
	t.Helper()
	h := &m.hold
	h.Mu.Lock()
	writing := h.Writing
	watching := append([]bool(nil), h.Watching...)
	h.Mu.Unlock()
	if writing {
		return false
	}
	for node, watched := range watching {
		if watched && trackedKeys(t, client, node) != 1 {
			return false
		}
	}
	return true
}

// trackedKeys returns how many keys node tracks for its clients, from
// INFO stats, read after every command the client sent to it.
func trackedKeys(t *testing.T, client *Client, node int) int {
	t.Helper()
	info := string(client.do(t, node, "INFO", "stats").Str)
	for line := range strings.Lines(info) {
		if value, ok := strings.CutPrefix(line, "tracking_total_keys:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO stats has no tracking_total_keys")
	return 0
}

// A node whose reply was not awaited is watched only if its arming read
// shows the hold's token: here the third node keeps another client's key.
// The hold does not watch it, and does not renew for it: the renewal's
// schedule is ten seconds away.
func TestRenewedHoldDoesNotWatchANodeHeldByAnother(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	observer := &extendObserver{extensions: make(chan ExtendEvent, 1)}
	client := nodes.client(t, Options{Observer: observer, Quarantine: QuarantineOff})
	client.do(t, 2, "SET", "watched", "another", "PX", "60000")
	ctx := context.Background()
	m := client.NewMutex("watched", MutexOptions{TTL: 30 * time.Second, AutoExtend: true})
	require.NoError(t, m.Lock(ctx))
	defer m.Unlock(ctx)

	// The arming read armed the key on every node, the third one too.
	require.True(t, waitUntil(func() bool {
		for node := range nodes.servers {
			if trackedKeys(t, client, node) != 1 {
				return false
			}
		}
		return true
	}), "the hold's key is armed on every node")
	h := &m.hold
	h.Mu.Lock()
	watching := append([]bool(nil), h.Watching...)
	h.Mu.Unlock()
	assert.Equal(t, []bool{true, true, false}, watching, "the hold watches the two nodes that hold its key, and only them")
	observer.mu.Lock()
	extensions := observer.count
	observer.mu.Unlock()
	assert.Zero(t, extensions, "the other client's key made the hold renew")
	assert.Equal(t, "another", client.values(t, "watched")[2], "the other client's key is left alone")
}
