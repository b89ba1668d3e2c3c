package redlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// TestEveryScriptSentBySHAIsLoadedOnConnect: a command that calls its
// script by its SHA1 finds it in the server's cache from the connection's
// first use. A script the handshake did not load meets NOSCRIPT, and when
// other commands were issued on the connection after it, the node's vote
// is lost: the first permits of a Semaphore failed so in the chaos run.
func TestEveryScriptSentBySHAIsLoadedOnConnect(t *testing.T) {
	nodes := startCluster(t, 1, redistest.Options{})
	nodes.client(t, Options{}) // connected
	scripts := map[string]*mux.Script{"permitsFreeLua": permitsFreeLua}
	for command, row := range protocol {
		if row.script != nil && !row.eval {
			scripts[fmt.Sprintf("protocol row %d", command)] = row.script
		}
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
