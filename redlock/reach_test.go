package redlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// A Lock that the two quick nodes decide while the third node's
// connection is still being dialled (the first lock of a new Client, or
// one after a reconnection) still sets its keys on the third node once
// the dial completes, and the first extension reaches them there: the
// hold does not live on a bare quorum.
func TestAcquisitionReachesANodeStillBeingDialled(t *testing.T) {
	redistest.RequireReal(t)
	tests := []struct {
		name      string
		keys      []string // further keys: a multi-key lock runs a script
		reconnect bool     // the third node's connection was up, and failed
	}{
		{name: "first lock of a new client"},
		{name: "first lock of a new client, several keys", keys: []string{"reach:b"}},
		{name: "lock after a reconnection", reconnect: true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			servers := redistest.StartN(t, 3, redistest.Options{})
			trustServers(t, servers...)
			slow := faultnet.New(t, servers[2].Addr())
			// The dial must outlast the Lock: it is released by the test.
			client, err := New([]string{servers[0].Addr(), servers[1].Addr(), slow.Addr()}, Options{DialTimeout: time.Minute, MaxTTL: time.Minute})
			require.NoError(t, err)
			t.Cleanup(func() { client.Close() })
			t.Cleanup(slow.ReleaseReplies) // first: a dial held in its handshake would hold Close up
			ctx := context.Background()
			if test.reconnect {
				for i, err := range client.group.Connect(ctx) {
					require.NoError(t, err, "node %d", i)
				}
			}
			// The third node's handshake is held from now on: its
			// connection is being dialled until the test lets it through.
			slow.HoldReplies()
			if test.reconnect {
				slow.CutLinks()
				pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
				client.group.Do(pingCtx, 2, mux.NewRequest("PING")) // fails: the connection learns it is down
				cancel()
				require.False(t, client.group.Connected(2))
			}

			m := client.NewMutex("reach:a", MutexOptions{TTL: 10 * time.Second, Keys: test.keys})
			require.NoError(t, m.Lock(ctx), "the two quick nodes are a quorum")
			token := m.Token()
			slow.ReleaseReplies()
			for _, key := range append([]string{"reach:a"}, test.keys...) {
				require.True(t, waitUntil(func() bool { return servers[2].Do(t, "GET", key) == token }),
					"the acquisition never reached the node that was being dialled: %s is %s there", key, servers[2].Do(t, "GET", key))
			}

			require.NoError(t, m.ExtendFor(ctx, time.Minute))
			assert.True(t, waitUntil(func() bool {
				ttl, _ := strconv.Atoi(servers[2].Do(t, "PTTL", "reach:a"))
				return ttl > 30_000
			}), "the extension did not reach the third node: PTTL %s", servers[2].Do(t, "PTTL", "reach:a"))
			require.NoError(t, m.Unlock(ctx))
			for _, server := range servers {
				assert.True(t, keyGoneWithin(t, server, "reach:a", 5*time.Second), "the release follows the acquisition on %s", server.Addr())
			}
		})
	}
}
