package redlock

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
)

// infoField returns one field of a server's INFO section.
func infoField(t *testing.T, server *redistest.Server, section, field string) string {
	t.Helper()
	for line := range strings.SplitSeq(server.Do(t, "INFO", section), "\n") {
		if value, found := strings.CutPrefix(strings.TrimSpace(line), field+":"); found {
			return value
		}
	}
	return ""
}

// waitForUptime waits until every server has been up for seconds.
func waitForUptime(t *testing.T, servers []*redistest.Server, seconds int) {
	t.Helper()
	for _, server := range servers {
		require.Eventually(t, func() bool {
			up, _ := strconv.Atoi(infoField(t, server, "server", "uptime_in_seconds"))
			return up >= seconds
		}, 10*time.Second, 50*time.Millisecond, "%s up for %d s", server.Addr(), seconds)
	}
}

// A server that has been up for longer than MaxTTL and shows no sign of
// having lost a key is trusted at its first contact, with no marker and
// no TrustNodes; a flush, even one whose statistics were reset since,
// keeps the server out for MaxTTL.
func TestQuarantineTrustsAServerUpLongerThanMaxTTL(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	waitForUptime(t, nodes.servers, 1)
	ctx := context.Background()
	options := Options{MaxTTL: 200 * time.Millisecond}

	first := nodes.client(t, options)
	m := first.NewMutex("first contact", MutexOptions{TTL: 200 * time.Millisecond})
	require.NoError(t, m.TryLock(ctx), "servers up for longer than MaxTTL vote at once")
	require.NoError(t, m.Unlock(ctx))
	assert.Zero(t, first.Stats().Quarantined)

	nodes.servers[1].Do(t, "FLUSHALL")
	nodes.servers[2].Do(t, "FLUSHALL")
	nodes.servers[2].Do(t, "CONFIG", "RESETSTAT")
	later := nodes.client(t, Options{MaxTTL: 10 * time.Second})
	err := later.NewMutex("after the flushes", MutexOptions{}).TryLock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired, "two flushed nodes of three")
	assert.True(t, quarantined(err), "%v", err)
}

// copyDirectory copies the files below from into to.
func copyDirectory(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(from, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		relative, err := filepath.Rel(from, path)
		if err != nil || relative == "." {
			return err
		}
		if entry.IsDir() {
			return os.MkdirAll(filepath.Join(to, relative), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, relative), data, 0o644)
	}))
}

// A replica R of a durable master M stops replicating; A locks on M and
// node 0 (node 2 cut from A); M crashes and its address moves to R, which
// restarts from its own append-only file without A's key. R's marker came
// from M by replication, and R's restart must not be trusted as durable:
// B would acquire on R and node 2 while A holds the lock.
func TestQuarantineDistrustsAMarkerThatCameByReplication(t *testing.T) {
	redistest.RequireReal(t)
	durable := redistest.Options{Persistence: redistest.PersistenceAOF}
	nodes := startCluster(t, 3, durable)
	replica := redistest.Start(t, durable)
	ctx := context.Background()
	options := Options{MaxTTL: 10 * time.Second}
	watcher := nodes.client(t, options)
	require.NoError(t, watcher.TrustNodes(ctx))

	replica.Do(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(nodes.servers[1].Port()))
	require.Eventually(t, func() bool {
		// The replica writes its append-only file anew after the sync.
		rewrites, _ := strconv.Atoi(infoField(t, replica, "persistence", "aof_rewrites"))
		return infoField(t, replica, "replication", "master_link_status") == "up" &&
			replica.Do(t, "GET", epochKey) != "(nil)" && rewrites > 0 &&
			infoField(t, replica, "persistence", "aof_rewrite_in_progress") == "0" &&
			infoField(t, replica, "persistence", "aof_rewrite_scheduled") == "0"
	}, 10*time.Second, 20*time.Millisecond, "the replica has M's marker in its append-only file")
	replica.Kill9() // R stops replicating

	a := cutFromLastNode(t, nodes, options)
	require.NoError(t, a.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second}).Lock(ctx), "A holds nodes 0 and 1")

	nodes.servers[1].Kill9()
	nodes.servers[1].Wipe()
	copyDirectory(t, replica.Dir(), nodes.servers[1].Dir())
	nodes.servers[1].Restart(t) // R's data at M's address
	require.Equal(t, "(nil)", nodes.servers[1].Do(t, "GET", "ledger"), "R never had A's key")

	b := nodes.client(t, options)
	err := b.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second}).TryLock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired, "B would hold the lock A holds")
	assert.True(t, quarantined(err), "R is quarantined: %v", err)
}

// A master made a replica whose link never came up keeps its data and
// its own marker; promoted again, it may lack writes its own master took
// meanwhile, and it is quarantined as any promoted replica is.
func TestQuarantineKeepsOutAMasterThatWasAReplicaSinceItsMarker(t *testing.T) {
	nodes := trustedCluster(t)
	ctx := context.Background()
	options := Options{MaxTTL: 10 * time.Second}
	before := nodes.client(t, options)
	m := before.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx), "node 1's marker is read")
	require.NoError(t, m.Unlock(ctx))
	require.Empty(t, before.Stats().Quarantined)

	host, port, _ := strings.Cut(redistest.ClosedAddress(t), ":")
	nodes.servers[1].Do(t, "REPLICAOF", host, port)
	nodes.servers[1].Do(t, "REPLICAOF", "NO", "ONE")

	after := nodes.client(t, options)
	fresh := after.NewMutex("fresh", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, fresh.TryLock(ctx), "two nodes of three")
	require.NoError(t, fresh.Unlock(ctx))
	assert.Equal(t, uint64(1), after.Stats().Quarantined, "node 1, a replica since its marker, is quarantined")
}

// setCalls returns how many SET commands a server ran, scripts' included.
func setCalls(t *testing.T, server *redistest.Server) int {
	t.Helper()
	stats := infoField(t, server, "commandstats", "cmdstat_set")
	calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
	n, _ := strconv.Atoi(calls)
	return n
}

// Clients watch the markers, and a marker written again wakes them all:
// a check that finds the marker as it should be leaves it alone, on a
// durable node too.
func TestQuarantineCheckLeavesAnUnchangedMarkerAlone(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{Persistence: redistest.PersistenceAOF})
	ctx := context.Background()
	options := Options{MaxTTL: 10 * time.Second}
	first := nodes.client(t, options)
	require.NoError(t, first.TrustNodes(ctx))
	m := first.NewMutex("ledger", MutexOptions{})
	require.NoError(t, m.Lock(ctx), "the first check writes the durable form")
	require.NoError(t, m.Unlock(ctx))

	before := setCalls(t, nodes.servers[0])
	second := nodes.client(t, options)
	other := second.NewMutex("other", MutexOptions{})
	require.NoError(t, other.TryLock(ctx))
	require.NoError(t, other.Unlock(ctx))
	assert.Zero(t, second.Stats().Quarantined)
	assert.Equal(t, before+1, setCalls(t, nodes.servers[0]), "the lock's own SET alone")
}

// A holds the lock on nodes 0 and 1 (node 2 cut from A); node 1 is
// flushed, losing A's key and its marker; B, which read node 1's marker
// before, asks at once. Node 1's vote is judged by its marker as it
// stands just after the vote, not by a verdict that a notification of the
// flush may not have changed yet (with RESP2 no notification comes).
func TestQuarantineJudgesAVoteByTheMarkerAfterIt(t *testing.T) {
	for name, protocol := range map[string]Protocol{"RESP2": ProtocolRESP2, "RESP3": ProtocolRESP3} {
		t.Run(name, func(t *testing.T) {
			nodes := trustedCluster(t)
			ctx := context.Background()
			options := Options{MaxTTL: 10 * time.Second, Protocol: protocol}
			a := cutFromLastNode(t, nodes, options)
			require.NoError(t, a.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second}).Lock(ctx), "A holds nodes 0 and 1")

			b := nodes.client(t, options)
			other := b.NewMutex("other", MutexOptions{})
			require.NoError(t, other.TryLock(ctx), "B reads every marker")
			require.NoError(t, other.Unlock(ctx))

			nodes.servers[1].Do(t, "FLUSHALL")
			err := b.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second}).TryLock(ctx)
			require.ErrorIs(t, err, ErrNotAcquired, "B would hold the lock A holds")
			assert.True(t, quarantined(err), "node 1 is quarantined: %v", err)
		})
	}
}

// A node whose user may not run the epoch script never has its marker
// read: its votes do not count, and the error says why.
func TestQuarantinedVoteSaysWhyTheMarkerWasNotRead(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	require.Equal(t, "OK", server.Do(t, "ACL", "SETUSER", "locker", "on", ">pw", "~*", "&*", "+@all", "-time"))
	client, err := New([]string{"redis://locker:pw@" + server.Addr()}, Options{})
	require.NoError(t, err)
	defer client.Close()
	err = client.NewMutex("ledger", MutexOptions{}).TryLock(context.Background())
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.True(t, quarantined(err), "%v", err)
	assert.Contains(t, err.Error(), "can't run this command", "the reason the marker was not read: the server's refusal")
}

// cutFromLastNode returns a Client over nodes whose link to the last node
// is cut: its holds live on the others alone.
func cutFromLastNode(t *testing.T, nodes *cluster, options Options) *Client {
	t.Helper()
	var proxied []string
	for i, server := range nodes.servers {
		proxy := faultnet.New(t, server.Addr())
		if i == len(nodes.servers)-1 {
			proxy.Partition()
		}
		proxied = append(proxied, proxy.Addr())
	}
	client, err := New(proxied, options)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}

// B reads node 1's marker; node 1 is made a replica of its own replica,
// which has the same marker but not A's newest key, and promoted again,
// while B's connection stays up (REPLICAOF closes none). The marker after
// B's vote is the one B read: only the server's new replication ID tells
// that the vote is a promoted replica's. (Found by the quarantine's model.)
func TestQuarantineJudgesAVoteAfterADemotionOverAKeptConnection(t *testing.T) {
	for name, protocol := range map[string]Protocol{"RESP2": ProtocolRESP2, "RESP3": ProtocolRESP3} {
		t.Run(name, func(t *testing.T) {
			nodes := trustedCluster(t)
			ctx := context.Background()
			options := Options{MaxTTL: 10 * time.Second, Protocol: protocol}
			b := nodes.client(t, options)
			other := b.NewMutex("other", MutexOptions{})
			require.NoError(t, other.TryLock(ctx), "B reads every marker")
			require.NoError(t, other.Unlock(ctx))

			replica := redistest.Start(t, redistest.Options{})
			follow(t, replica, nodes.servers[1], func() bool { return replica.Do(t, "GET", epochKey) != "(nil)" })
			replica.Do(t, "REPLICAOF", "NO", "ONE")

			a := cutFromLastNode(t, nodes, options)
			require.NoError(t, a.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second}).Lock(ctx), "A holds nodes 0 and 1")

			follow(t, nodes.servers[1], replica, func() bool { return nodes.servers[1].Do(t, "GET", "ledger") == "(nil)" })
			nodes.servers[1].Do(t, "REPLICAOF", "NO", "ONE")

			err := b.NewMutex("ledger", MutexOptions{TTL: 10 * time.Second}).TryLock(ctx)
			require.ErrorIs(t, err, ErrNotAcquired, "B would hold the lock A holds")
			assert.True(t, quarantined(err), "node 1 is quarantined: %v", err)
		})
	}
}

// follow makes server a replica of master and waits until its link is up
// and synced says so.
func follow(t *testing.T, server, master *redistest.Server, synced func() bool) {
	t.Helper()
	server.Do(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(master.Port()))
	require.Eventually(t, func() bool {
		return infoField(t, server, "replication", "master_link_status") == "up" && synced()
	}, 10*time.Second, 20*time.Millisecond, "%s follows %s", server.Addr(), master.Addr())
}
