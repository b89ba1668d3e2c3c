package redlock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// mixedMembers is a Redis Cluster member and two plain servers, all
// stated new: the addresses of a Client over the three, and of a Client
// cut from the last plain server, whose holds live on the cluster and
// the first plain server alone.
type mixedMembers struct {
	cluster   *redistest.Cluster
	addresses []string
	cut       []string
}

// startMixedMembers starts a cluster of three masters (with a replica
// each when withReplicas is set) and two plain servers, and states them
// all new.
func startMixedMembers(t *testing.T, withReplicas bool) *mixedMembers {
	t.Helper()
	m := &mixedMembers{cluster: redistest.StartCluster(t, 3, withReplicas, redistest.Options{})}
	m.trustCluster(t)
	plain := startCluster(t, 2, redistest.Options{})
	m.addresses = append([]string{m.cluster.Address()}, plain.addresses...)
	m.cut = []string{m.cluster.Address()}
	for i, server := range plain.servers {
		proxy := faultnet.New(t, server.Addr())
		if i == len(plain.servers)-1 {
			proxy.Partition()
		}
		m.cut = append(m.cut, proxy.Addr())
	}
	return m
}

// trustCluster states the cluster's masters, as they are now, new.
func (m *mixedMembers) trustCluster(t *testing.T) {
	t.Helper()
	_, trusting := trustedClient(t, []string{m.cluster.Address()}, 20*time.Second)
	require.NoError(t, trusting.Close())
}

// keyOn returns a key whose slot master serves now.
func (m *mixedMembers) keyOn(t *testing.T, master *redistest.Server) string {
	t.Helper()
	for i := range 10000 {
		key := "ledger:" + strconv.Itoa(i)
		if m.cluster.MasterOf(mux.Slot(key)) == master {
			return key
		}
	}
	t.Fatal("no key found")
	return ""
}

// cutClient returns a Client over the members, cut from the last plain
// server.
func (m *mixedMembers) cutClient(t *testing.T, options Options) *Client {
	t.Helper()
	client, err := New(m.cut, options)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}

// A holds a key on the cluster member and the first plain server; the
// key's master is flushed, losing A's key and its marker; B, which read
// that master's marker before, asks at once. The cluster's vote is judged
// by the master's marker as it stands just after the vote, on the same
// connection, not by a verdict that a notification of the flush may not
// have changed yet: with RESP2, B's connections watch nothing, and no
// notification ever comes, which makes the race certain.
func TestClusterMemberJudgesAVoteByTheMarkerAfterIt(t *testing.T) {
	for name, protocol := range map[string]Protocol{"RESP2": ProtocolRESP2, "RESP3": ProtocolRESP3} {
		t.Run(name, func(t *testing.T) {
			members := startMixedMembers(t, false)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			options := Options{MaxTTL: 10 * time.Second, Protocol: protocol}
			key := members.keyOn(t, members.cluster.Masters[0])
			a := members.cutClient(t, options)
			require.NoError(t, a.NewMutex(key, MutexOptions{TTL: 10 * time.Second}).Lock(ctx), "A holds the cluster and the first plain server")

			b := connectedClient(t, members.addresses, options) // B reads every master's marker
			members.cluster.Masters[0].Do(t, "FLUSHALL")
			err := b.NewMutex(key, MutexOptions{TTL: 10 * time.Second}).TryLock(ctx)
			require.ErrorIs(t, err, ErrNotAcquired, "B would hold the lock A holds")
			assert.True(t, quarantined(err), "the flushed master is quarantined: %v", err)
		})
	}
}

// B reads the markers of the cluster's masters. Master M is demoted
// (CLUSTER FAILOVER: its replica R is promoted), its replication link is
// then broken (R refuses to serve it), so that it keeps its old data and
// its old marker; A, a client that trusts R, holds a key of M's shard on
// R and the first plain server; M takes its slots back (CLUSTER FAILOVER
// TAKEOVER), without A's key. B's connection to M stayed up all along,
// and B's slot map names M the key's master as it did: M's vote is judged
// by what M is now, a master promoted again, which its replication ID
// tells after the vote. With RESP2 no notification of the demotion (the
// demoted master's full resynchronisation, when it takes one) can reach
// B before its vote: the race is certain.
func TestClusterMemberQuarantinesAMasterPromotedAgainOverAKeptConnection(t *testing.T) {
	for name, protocol := range map[string]Protocol{"RESP2": ProtocolRESP2, "RESP3": ProtocolRESP3} {
		t.Run(name, func(t *testing.T) { quarantinesAMasterPromotedAgain(t, protocol) })
	}
}

// quarantinesAMasterPromotedAgain is the case of
// TestClusterMemberQuarantinesAMasterPromotedAgainOverAKeptConnection with
// protocol.
func quarantinesAMasterPromotedAgain(t *testing.T, protocol Protocol) {
	members := startMixedMembers(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	options := Options{MaxTTL: 10 * time.Second, Protocol: protocol}
	demoted := members.cluster.Masters[0]
	key := members.keyOn(t, demoted)
	b := connectedClient(t, members.addresses, options)
	other := b.NewMutex(members.keyOn(t, members.cluster.Masters[1]), MutexOptions{})
	require.NoError(t, other.TryLock(ctx), "B reads every master's marker")
	require.NoError(t, other.Unlock(ctx))

	promoted := members.cluster.Failover(0)
	require.Equal(t, "OK", promoted.Do(t, "ACL", "SETUSER", "default", "-psync", "-sync", "-replconf"))
	promoted.Do(t, "CLIENT", "KILL", "TYPE", "replica")
	require.Eventually(t, func() bool {
		return infoField(t, demoted, "replication", "master_link_status") == "down"
	}, 10*time.Second, 20*time.Millisecond, "the demoted master's link is broken")

	members.trustCluster(t) // R's marker, which M never gets
	a := members.cutClient(t, options)
	require.NoError(t, a.NewMutex(key, MutexOptions{TTL: 10 * time.Second}).Lock(ctx), "A holds R and the first plain server")

	require.Equal(t, "OK", demoted.Do(t, "CLUSTER", "FAILOVER", "TAKEOVER"))
	require.Eventually(t, func() bool {
		return strings.HasPrefix(demoted.Do(t, "ROLE"), "[master ")
	}, 10*time.Second, 20*time.Millisecond, "M is a master again")
	members.cluster.WaitOK()
	require.Equal(t, "(nil)", demoted.Do(t, "GET", key), "M does not have A's key")

	err := b.NewMutex(key, MutexOptions{TTL: 10 * time.Second}).TryLock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired, "B would hold the lock A holds")
	assert.True(t, quarantined(err), "M is quarantined: %v", err)
}
