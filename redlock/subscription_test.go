package redlock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/resp"
)

// A waiter whose release notifications cannot reach a quorum of nodes
// retries at the retry delay, as the documentation promises, not eight
// retry delays later: for nodes that speak RESP2 only, for a Client that
// asks for RESP2, and for a user whom the ACL denies the channels.
func TestWaiterRetriesAtTheRetryDelayWithoutNotifications(t *testing.T) {
	redistest.RequireReal(t)
	const retryDelayMax = 20 * time.Millisecond
	const slack = 30 * time.Millisecond
	tests := []struct {
		name    string
		nodes   func(t *testing.T) *cluster
		options Options
	}{
		{name: "every node RESP2 only", nodes: func(t *testing.T) *cluster { return startMixedCluster(t, 3, 0) }},
		{name: "a quorum of nodes RESP2 only", nodes: func(t *testing.T) *cluster { return startMixedCluster(t, 2, 1) }},
		{name: "Options.Protocol RESP2", nodes: func(t *testing.T) *cluster { return startMixedCluster(t, 0, 3) },
			options: Options{Protocol: ProtocolRESP2}},
		{name: "no channel rights", nodes: func(t *testing.T) *cluster { return startCluster(t, 3, noChannelRights) },
			options: Options{Username: "locker", Password: "pw"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := tt.nodes(t)
			holder := nodes.client(t, tt.options).NewMutex("k", MutexOptions{})
			observer := newWaitObserver()
			options := tt.options
			options.Observer = observer
			waiter := nodes.client(t, options).NewMutex("k", MutexOptions{RetryDelayMin: retryDelayMax / 2, RetryDelayMax: retryDelayMax})

			delays := handoffDelays(t, holder, waiter, observer, 15)
			t.Logf("from a release to the next acquisition: median %v, all %v", median(delays), delays)
			assert.LessOrEqual(t, median(delays), retryDelayMax+slack, "the median handoff: the retry delay, not eight")
		})
	}
}

// A node that speaks RESP2 only is found out once, by the handshake of its
// subscription connection, and reported once: no connection is dialled to
// it again while waiters wait.
func TestRESP2OnlyNodeIsDetectedOnce(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startMixedCluster(t, 2, 1)
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(context.Background()))
	observer := newWaitObserver()
	waiter := nodes.client(t, Options{Observer: observer}).NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	locked := startWaiting(t, ctx, waiter, observer)

	connections := connectionsDuring(t, nodes.servers, time.Second)
	cancel()
	require.ErrorIs(t, (<-locked).err, context.Canceled)
	t.Logf("connections accepted in 1 s while a waiter waits: %v", connections)
	for i, server := range nodes.servers {
		assert.LessOrEqual(t, connections[i], 1, "node %d: connections in 1 s", i)
		reports := observer.subscriptionReports(server.Addr())
		if i < 2 {
			if assert.Len(t, reports, 1, "node %d speaks RESP2 only: one report", i) {
				assert.ErrorIs(t, reports[0].Err, ErrNotificationsUnavailable)
				assert.Contains(t, reports[0].Err.Error(), "RESP2")
			}
		} else {
			assert.Empty(t, reports, "node %d speaks RESP3", i)
		}
	}
}

// Options.Protocol RESP2 is a choice the notifier follows: no connection of
// the Client speaks RESP3, and each node is reported once as unable to
// notify.
func TestOptionsProtocolRESP2MakesNoRESP3Connection(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(context.Background()))
	observer := newWaitObserver()
	waiter := nodes.client(t, Options{Protocol: ProtocolRESP2, ClientName: "resp2-waiter", Observer: observer}).
		NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startWaiting(t, ctx, waiter, observer)

	for i, server := range nodes.servers {
		var protocols []string
		for line := range strings.Lines(server.Do(t, "CLIENT", "LIST")) {
			if strings.Contains(line, " name=resp2-waiter ") {
				for field := range strings.FieldsSeq(line) {
					if strings.HasPrefix(field, "resp=") {
						protocols = append(protocols, field)
					}
				}
			}
		}
		assert.NotEmpty(t, protocols, "node %d: the Client's connections", i)
		assert.NotContains(t, protocols, "resp=3", "node %d: CLIENT LIST of the Client's connections", i)
		reports := observer.subscriptionReports(server.Addr())
		if assert.Len(t, reports, 1, "node %d: one report", i) {
			assert.ErrorIs(t, reports[0].Err, ErrNotificationsUnavailable)
		}
	}
}

// Nodes that can notify keep notifying when another node cannot: with one
// node of three RESP2 only, a quorum still announces a release, and the
// waiter, whose own retries are an hour apart, is woken by it.
func TestRESP3NodesKeepNotifyingBesideARESP2Node(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startMixedCluster(t, 1, 2)
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{})
	require.NoError(t, holder.Lock(context.Background()))
	observer := newWaitObserver()
	waiter := nodes.client(t, Options{Observer: observer, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour}).NewMutex("k", MutexOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	locked := startWaiting(t, ctx, waiter, observer)
	// Let the subscriptions settle: the RESP3 nodes count the waiter's, and
	// the looks that their confirmations caused are over. A look racing
	// with the release could meet it half done: a split vote, whose backoff
	// (an hour) is deaf to notifications.
	for _, server := range nodes.servers[1:] {
		awaitSubscribers(t, server, releasedChannelPrefix+"k", 1)
	}
	observer.awaitQuiet(t, 200*time.Millisecond)

	require.NoError(t, holder.Unlock(context.Background()))
	require.NoError(t, (<-locked).err, "with retries an hour apart, only the notification can have woken it")
	assert.Len(t, observer.subscriptionReports(nodes.addresses[0]), 1, "the RESP2 node is reported")
}

// A user without channel rights can lock and unlock: the release script's
// announcement is refused, not the release.
func TestUnlockWithoutChannelRights(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, noChannelRights)
	client := nodes.client(t, Options{Username: "locker", Password: "pw"})
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	require.NoError(t, m.Unlock(context.Background()))
	assert.Equal(t, []string{"", "", ""}, client.values(t, "k"))
}

// A subscription that the ACL refuses is found out once per node and
// reported once, and the node is not dialled again: before, each refusal
// closed the connection as an unsolicited reply and redialled at once,
// about ninety connections a second per node.
func TestRefusedSubscriptionIsReportedOnce(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, noChannelRights)
	credentials := Options{Username: "locker", Password: "pw"}
	holder := nodes.client(t, credentials).NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(context.Background()))
	observer := newWaitObserver()
	options := credentials
	options.Observer = observer
	waiter := nodes.client(t, options).NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	locked := startWaiting(t, ctx, waiter, observer)

	connections := connectionsDuring(t, nodes.servers, 2*time.Second)
	cancel()
	require.ErrorIs(t, (<-locked).err, context.Canceled)
	t.Logf("connections accepted in 2 s while a waiter waits: %v", connections)
	for i, server := range nodes.servers {
		assert.LessOrEqual(t, connections[i], 1, "node %d: connections in 2 s", i)
		reports := observer.subscriptionReports(server.Addr())
		if assert.Len(t, reports, 1, "node %d: one report", i) {
			report := reports[0]
			assert.Equal(t, OutcomeError, report.Outcome)
			assert.ErrorIs(t, report.Err, ErrNotificationsUnavailable)
			assert.ErrorIs(t, report.Err, ErrConfig, "an ACL is configuration")
			assert.Contains(t, report.Err.Error(), "NOPERM")
			assert.Contains(t, report.Err.Error(), "&lockmux:released:*", "the report says the fix")
		}
	}
}

// A subscription connection that keeps failing is redialled with a
// backoff that grows, not at once: a node that closes the connection on
// every SUBSCRIBE sees a handful of connections in two seconds, not
// hundreds.
func TestSubscriptionRedialsBackOff(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 2, redistest.Options{})
	closer := redistest.NewFake(t, func(command []string) []byte {
		switch strings.ToUpper(command[0]) {
		case "HELLO":
			return []byte("%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n")
		case "INFO":
			info := "# Server\r\nrun_id:" + strings.Repeat("f", 40) + "\r\n"
			return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte(info)})
		case "CLIENT":
			return []byte("+OK\r\n")
		case "SCRIPT":
			return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte(mux.NewScript(command[2]).SHA())})
		case "SUBSCRIBE":
			return nil // closes the connection
		}
		return []byte("-ERR this node locks nothing\r\n")
	})
	nodes.addresses = append(nodes.addresses, closer.Addr())
	holder := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(context.Background()), "two nodes of three are a quorum")
	observer := newWaitObserver()
	waiter := nodes.client(t, Options{Observer: observer}).NewMutex("k", MutexOptions{TTL: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	locked := startWaiting(t, ctx, waiter, observer)

	before := closer.Accepted()
	time.Sleep(2 * time.Second) // the window to count in, not a synchronisation
	connections := closer.Accepted() - before
	cancel()
	require.ErrorIs(t, (<-locked).err, context.Canceled)
	t.Logf("connections accepted in 2 s by a node that closes every subscription: %d", connections)
	assert.LessOrEqual(t, connections, 8, "redials of a failing subscription back off")
}
