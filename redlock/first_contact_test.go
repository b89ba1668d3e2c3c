package redlock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/redlock/internal/round"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryScriptSentBySHAIsLoadedOnConnect: a command that calls its
// script by its SHA1 finds it in the server's cache from the connection's
// first use. A script the handshake did not load meets NOSCRIPT, and when
// other commands were issued on the connection after it, the node's vote
// is lost: the first permits of a Semaphore failed so in the chaos run.
func TestEveryScriptSentBySHAIsLoadedOnConnect(t *testing.T) {
	nodes := startCluster(t, 1, redistest.Options{})
	nodes.client(t, Options{}) // connected
	scripts := map[string]*mux.Script{"protocol.PermitsFree": protocol.PermitsFree}
	for command, script := range round.ScriptsBySHA() {
		scripts[fmt.Sprintf("protocol row %d", command)] = script
	}
	for name, script := range scripts {
		assert.Equal(t, "[1]", nodes.servers[0].Do(t, "SCRIPT", "EXISTS", script.SHA()), "the script of %s is not loaded", name)
	}
}

// TestFirstPermitsMeetNoNOSCRIPT: a new Client's first permits of a
// Semaphore, fenced or not, and its count of free permits, find their
// scripts loaded.
func TestFirstPermitsMeetNoNOSCRIPT(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, options := range []MutexOptions{{TTL: 10 * time.Second}, {TTL: 10 * time.Second, Fencing: true}} {
		semaphore := client.NewSemaphore("first-contact", 2, options)
		permit, err := semaphore.TryAcquire(ctx)
		require.NoError(t, err)
		_, err = semaphore.Available(ctx)
		require.NoError(t, err)
		require.NoError(t, permit.Release(ctx))
	}
	for _, server := range nodes.servers {
		assert.NotContains(t, server.Do(t, "INFO", "errorstats"), "NOSCRIPT", "a command met NOSCRIPT on %s", server.Addr())
	}
}

// TestFirstLockWaitsForNoStalledDial: with the quarantine, a new Client's
// first TryLock reads the markers of the nodes that connected and
// acquires on a quorum of them, whatever a node whose dial never ends
// (it accepts connections and answers nothing) does. The first
// verification waited for every dial, up to the dial timeout, and then
// read the markers with a context that had ended with that wait: the
// first TryLock failed after 2 s, every vote quarantined.
func TestFirstLockWaitsForNoStalledDial(t *testing.T) {
	nodes := startCluster(t, 5, redistest.Options{})
	trusting := nodes.client(t, Options{})
	require.NoError(t, trusting.TrustNodes(context.Background()))
	stalled := faultnet.New(t, nodes.addresses[4])
	stalled.Blackhole()
	addresses := append(slices.Clone(nodes.addresses[:4]), stalled.Addr())
	// A dial that never ends: only its timeout would end it.
	client, err := New(addresses, Options{DialTimeout: time.Hour})
	require.NoError(t, err)
	m := client.NewMutex("first-contact", MutexOptions{TTL: 10 * time.Second})
	result := make(chan error, 1)
	go func() { result <- m.TryLock(context.Background()) }()
	select {
	case err := <-result:
		assert.NoError(t, err, "the first TryLock")
	case <-time.After(30 * time.Second):
		// Not a speed bound: without the fix, the call waits for the dial
		// timeout, an hour.
		t.Error("the first TryLock still waits after 30 s, for the dial of the stalled node")
		client.Close()
		<-result
	}
	client.Close()
}

// BenchmarkFirstContact measures what a new Client costs before its first
// lock: the dials and handshakes of every node (HELLO; INFO, CONFIG GET
// appendfsync and SCRIPT LOAD in one write), the epoch markers read by the
// quarantine, and the first TryLock, each with its Close; with a
// node that accepts connections and answers nothing too:
//
//	go test -run '^$' -bench FirstContact ./redlock/
func BenchmarkFirstContact(b *testing.B) {
	nodes := startCluster(b, 5, redistest.Options{})
	require.NoError(b, nodes.client(b, Options{}).TrustNodes(context.Background()))
	stalled := faultnet.New(b, nodes.addresses[4])
	stalled.Blackhole()
	withStalled := append(slices.Clone(nodes.addresses[:4]), stalled.Addr())
	ctx := context.Background()
	newClient := func(b *testing.B, addresses []string, quarantine QuarantineMode) *Client {
		client, err := New(addresses, Options{Quarantine: quarantine})
		if err != nil {
			b.Fatal(err)
		}
		return client
	}
	b.Run("connect", func(b *testing.B) {
		for b.Loop() {
			client := newClient(b, nodes.addresses, QuarantineOn)
			client.group.Connect(ctx)
			client.Close()
		}
	})
	b.Run("connect+markers", func(b *testing.B) {
		for b.Loop() {
			client := newClient(b, nodes.addresses, QuarantineOn)
			client.quarantine.Verify(context.Background())
			client.Close()
		}
	})
	for _, bench := range []struct {
		name       string
		addresses  []string
		quarantine QuarantineMode
	}{
		{"trylock/quarantine=off", nodes.addresses, QuarantineOff},
		{"trylock/quarantine=on", nodes.addresses, QuarantineOn},
		{"trylock/quarantine=off/stalled-node", withStalled, QuarantineOff},
		{"trylock/quarantine=on/stalled-node", withStalled, QuarantineOn},
	} {
		b.Run(bench.name, func(b *testing.B) {
			// No Unlock: Close would wait, up to the dial timeout, for the
			// release queued behind the stalled node's dial.
			key := 0
			for b.Loop() {
				key++
				client := newClient(b, bench.addresses, bench.quarantine)
				m := client.NewMutex("bench:first-contact:"+bench.name+":"+strconv.Itoa(key), MutexOptions{TTL: time.Second})
				if err := m.TryLock(ctx); err != nil {
					b.Fatal(err)
				}
				client.Close()
			}
		})
	}
}
