package mux_test

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

// watcher records what a Subscriber that tracks keys reports.
type watcher struct {
	subscriber    *mux.Subscriber
	invalidations chan mux.Invalidation
	connects      chan int
	unavailable   chan error // OnTrackingUnavailable
	noPush        chan error // OnUnavailable
	pushes        chan string
}

// watch starts a Subscriber over group with every handler recording.
func watch(t *testing.T, group *mux.Group) *watcher {
	t.Helper()
	w := &watcher{
		invalidations: make(chan mux.Invalidation, 1024),
		connects:      make(chan int, 64),
		unavailable:   make(chan error, 64),
		noPush:        make(chan error, 64),
		pushes:        make(chan string, 64),
	}
	w.subscriber = group.Subscribe(mux.SubscribeOptions{
		OnConnect: func(node int) { w.connects <- node },
		OnPush: func(node int, push resp.Value) {
			w.pushes <- string(push.Elems[0].Str)
		},
		OnUnavailable:         func(node int, err error) { w.noPush <- err },
		OnInvalidate:          func(invalidation mux.Invalidation) { w.invalidations <- invalidation },
		OnTrackingUnavailable: func(node int, err error) { w.unavailable <- err },
	})
	t.Cleanup(w.subscriber.Close)
	return w
}

// receive returns the next value of channel, failing the test after 5 s.
func receive[T any](t *testing.T, channel <-chan T) T {
	t.Helper()
	select {
	case value := <-channel:
		return value
	case <-time.After(5 * time.Second):
		require.FailNow(t, "nothing received in 5 s")
		var zero T
		return zero
	}
}

// connected waits for the connection of each node.
func (w *watcher) connected(t *testing.T, nodes int) {
	t.Helper()
	seen := map[int]bool{}
	for len(seen) < nodes {
		seen[receive(t, w.connects)] = true
	}
}

// track arms keys on node with a PTTL of the first key, or an MGET of
// them all, and requires it to succeed.
func (w *watcher) track(t *testing.T, node int, tag uint64, keys ...string) resp.Value {
	t.Helper()
	request := mux.NewRequest(append([]string{"MGET"}, keys...)...)
	if len(keys) == 1 {
		request = mux.NewRequest("PTTL", keys[0])
	}
	require.NoError(t, w.subscriber.Track(context.Background(), node, request, tag, keys...))
	return request.Reply()
}

// outside runs a command on server with a connection of its own, as
// another client would.
func outside(t *testing.T, server *redistest.Server, arguments ...string) {
	t.Helper()
	reply := server.Do(t, arguments...)
	require.False(t, strings.HasPrefix(reply, "-"), "%v: %s", arguments, reply)
}

// The case of issue 13: a lock key cut short on two nodes of three by
// somebody else is reported at once, by those two nodes, with the tag of
// the arming.
func TestTrackReportsAnOutsideChange(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 3)
	w := watch(t, group)
	w.connected(t, 3)
	for node, server := range servers {
		outside(t, server, "SET", "lock", "token", "PX", "60000")
		ttl := w.track(t, node, 7, "lock")
		assert.Positive(t, ttl.Int, "the reply shows what the arming read saw")
	}

	outside(t, servers[0], "PEXPIRE", "lock", "100")
	outside(t, servers[2], "PEXPIRE", "lock", "100")
	reported := map[int]mux.Invalidation{}
	for range 2 {
		invalidation := receive(t, w.invalidations)
		reported[invalidation.Node] = invalidation
	}
	assert.Equal(t, map[int]mux.Invalidation{
		0: {Node: 0, Key: "lock", Tag: 7, Cause: mux.InvalidatedKey},
		2: {Node: 2, Key: "lock", Tag: 7, Cause: mux.InvalidatedKey},
	}, reported)

	// An arming is ended by its invalidation: the expiry that follows is
	// not reported, while the key armed again on node 1 still is.
	outside(t, servers[1], "PEXPIRE", "lock", "100")
	assert.Equal(t, mux.Invalidation{Node: 1, Key: "lock", Tag: 7, Cause: mux.InvalidatedKey}, receive(t, w.invalidations))
	assert.Empty(t, w.invalidations)
}

// TestOwnWritesAreReportedWithTheArmingTheyEnded is the rule a holder
// uses to tell its own writes from others': a key armed again after each
// of its own writes has been answered is reported, for that write, with
// the tag of the arming before it, never with the tag of the arming after
// it; only a change by somebody else carries the latest tag.
func TestOwnWritesAreReportedWithTheArmingTheyEnded(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 1)
	w := watch(t, group)
	w.connected(t, 1)
	outside(t, servers[0], "SET", "lock", "token", "PX", "60000")
	w.track(t, 0, 1, "lock")

	extend := mux.NewRequest("PEXPIRE", "lock", "60000") // on the Group's own connection
	const writes = 200
	for tag := uint64(2); tag <= writes+1; tag++ {
		require.NoError(t, group.Do(context.Background(), 0, extend))
		require.Equal(t, int64(1), extend.Reply().Int)
		w.track(t, 0, tag, "lock")
	}
	outside(t, servers[0], "PEXPIRE", "lock", "100")

	for tag := uint64(1); tag <= writes; tag++ {
		assert.Equal(t, mux.Invalidation{Node: 0, Key: "lock", Tag: tag, Cause: mux.InvalidatedKey}, receive(t, w.invalidations),
			"the own write after arming %d", tag)
	}
	assert.Equal(t, mux.Invalidation{Node: 0, Key: "lock", Tag: writes + 1, Cause: mux.InvalidatedKey}, receive(t, w.invalidations),
		"the outside write")
}

func TestFlushReportsEveryArmedKey(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 1)
	w := watch(t, group)
	w.connected(t, 1)
	outside(t, servers[0], "SET", "a", "token")
	values := w.track(t, 0, 3, "a", "b")
	assert.Equal(t, "token", string(values.Elems[0].Str))
	assert.True(t, values.Elems[1].Null)

	outside(t, servers[0], "FLUSHALL")
	reported := map[string]mux.Invalidation{}
	for range 2 {
		invalidation := receive(t, w.invalidations)
		reported[invalidation.Key] = invalidation
	}
	assert.Equal(t, map[string]mux.Invalidation{
		"a": {Node: 0, Key: "a", Tag: 3, Cause: mux.InvalidatedFlush},
		"b": {Node: 0, Key: "b", Tag: 3, Cause: mux.InvalidatedFlush},
	}, reported)
}

// Tracking and subscriptions share the connection: a subscribed
// connection still arms keys, and messages still arrive.
func TestTrackingOnASubscribedConnection(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 1)
	w := watch(t, group)
	w.connected(t, 1)
	require.True(t, w.subscriber.SendTo(0, resp.AppendCommand(nil, "SUBSCRIBE", "releases")))
	assert.Equal(t, "subscribe", receive(t, w.pushes))

	w.track(t, 0, 9, "lock")
	outside(t, servers[0], "PUBLISH", "releases", "x")
	assert.Equal(t, "message", receive(t, w.pushes))
	outside(t, servers[0], "SET", "lock", "other")
	assert.Equal(t, mux.Invalidation{Node: 0, Key: "lock", Tag: 9, Cause: mux.InvalidatedKey}, receive(t, w.invalidations))
	assert.Empty(t, w.pushes, "invalidations do not go to OnPush")
}

// trackingClientID returns the id of the client of server that tracks
// keys: the subscription connection.
func trackingClientID(t *testing.T, server *redistest.Server) string {
	t.Helper()
	for line := range strings.SplitSeq(server.Do(t, "CLIENT", "LIST"), "\n") {
		fields := strings.Fields(line)
		flags, id := "", ""
		for _, field := range fields {
			if value, ok := strings.CutPrefix(field, "flags="); ok {
				flags = value
			}
			if value, ok := strings.CutPrefix(field, "id="); ok {
				id = value
			}
		}
		if strings.Contains(flags, "t") {
			return id
		}
	}
	require.FailNow(t, "no client tracks keys")
	return ""
}

// A lost subscription connection reports every key it armed as possibly
// changed, with the error that ended it; the next connection tracks again.
func TestReconnectionReportsArmedKeysAndTracksAgain(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 1)
	w := watch(t, group)
	w.connected(t, 1)
	w.track(t, 0, 1, "lock")

	outside(t, servers[0], "CLIENT", "KILL", "ID", trackingClientID(t, servers[0]))
	lost := receive(t, w.invalidations)
	assert.Equal(t, mux.Invalidation{Node: 0, Key: "lock", Tag: 1, Cause: mux.InvalidatedDisconnected}, mux.Invalidation{
		Node: lost.Node, Key: lost.Key, Tag: lost.Tag, Cause: lost.Cause})
	assert.Error(t, lost.Err)

	assert.Equal(t, 0, receive(t, w.connects), "connected again")
	w.track(t, 0, 2, "lock")
	outside(t, servers[0], "SET", "lock", "other")
	assert.Equal(t, mux.Invalidation{Node: 0, Key: "lock", Tag: 2, Cause: mux.InvalidatedKey}, receive(t, w.invalidations),
		"the new connection tracks")
}

// While a node's subscription connection is down, nothing can be armed on
// it: Track says so at once.
func TestTrackFailsFastWhileDisconnected(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 1)
	w := watch(t, group)
	w.connected(t, 1)
	w.track(t, 0, 1, "lock")
	servers[0].Kill9()
	assert.Equal(t, mux.InvalidatedDisconnected, receive(t, w.invalidations).Cause)

	err := w.subscriber.Track(context.Background(), 0, mux.NewRequest("PTTL", "lock"), 2, "lock")
	assert.ErrorIs(t, err, mux.ErrNotConnected)
}

func TestTrackingUnavailableWithoutRESP3(t *testing.T) {
	tests := []struct {
		name    string
		server  redistest.Options
		options mux.Options
	}{
		{name: "Options.Protocol RESP2", options: mux.Options{Protocol: mux.ProtocolRESP2}},
		{name: "server without HELLO", server: redistest.Options{ExtraArgs: []string{"--rename-command", "HELLO", ""}}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			redistest.RequireReal(t)
			server := redistest.Start(t, test.server)
			group, err := mux.New([]string{server.Addr()}, test.options)
			require.NoError(t, err)
			t.Cleanup(func() { group.Close() })
			w := watch(t, group)

			err = receive(t, w.unavailable)
			assert.ErrorIs(t, err, mux.ErrTrackingUnavailable)
			assert.ErrorIs(t, err, mux.ErrPushUnavailable, "the subscriptions are unavailable too")
			assert.ErrorIs(t, receive(t, w.noPush), mux.ErrPushUnavailable)
			err = w.subscriber.Track(context.Background(), 0, mux.NewRequest("PTTL", "lock"), 1, "lock")
			assert.ErrorIs(t, err, mux.ErrTrackingUnavailable)
		})
	}
}

// A server whose ACL refuses CLIENT TRACKING cannot track keys, which is
// reported once; its subscriptions go on.
func TestTrackingRefusedByACLLeavesSubscriptions(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{ACLUsers: []string{"locker on >pw ~* &* +@all -client|tracking"}})
	group, err := mux.New([]string{"redis://locker:pw@" + server.Addr()}, mux.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	w := watch(t, group)

	err = receive(t, w.unavailable)
	assert.ErrorIs(t, err, mux.ErrTrackingUnavailable)
	var refusal *resp.ServerError
	require.ErrorAs(t, err, &refusal)
	assert.Equal(t, "NOPERM", string(refusal.Code()))
	err = w.subscriber.Track(context.Background(), 0, mux.NewRequest("PTTL", "lock"), 1, "lock")
	assert.ErrorIs(t, err, mux.ErrTrackingUnavailable)

	receive(t, w.connects)
	require.True(t, w.subscriber.SendTo(0, resp.AppendCommand(nil, "SUBSCRIBE", "releases")))
	assert.Equal(t, "subscribe", receive(t, w.pushes))
	outside(t, server, "PUBLISH", "releases", "x")
	assert.Equal(t, "message", receive(t, w.pushes))
	assert.Empty(t, w.noPush)
	assert.Empty(t, w.unavailable, "reported once")
}

// An arming read that the server refuses arms nothing, and says why.
func TestTrackReadRefused(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{ACLUsers: []string{"locker on >pw ~lock:* &* +@all"}})
	group, err := mux.New([]string{"redis://locker:pw@" + server.Addr()}, mux.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	w := watch(t, group)
	w.connected(t, 1)

	err = w.subscriber.Track(context.Background(), 0, mux.NewRequest("PTTL", "other"), 1, "other")
	var refusal *resp.ServerError
	require.ErrorAs(t, err, &refusal)
	assert.Equal(t, "NOPERM", string(refusal.Code()))
	w.track(t, 0, 2, "lock:a")
	outside(t, server, "SET", "lock:a", "x")
	assert.Equal(t, mux.Invalidation{Node: 0, Key: "lock:a", Tag: 2, Cause: mux.InvalidatedKey}, receive(t, w.invalidations))
}
