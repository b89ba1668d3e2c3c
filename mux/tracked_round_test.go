package mux_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// writeThenRead sets key's TTL and reads key again, as a renewal of a
// watched hold does.
var writeThenRead = mux.NewScript(`redis.call("PEXPIRE", KEYS[1], 60000) return redis.call("PTTL", KEYS[1])`)

// trackedRenewal fills round with writeThenRead of key, tracked on w's
// connections with tag.
func trackedRenewal(round *mux.Round, w *watcher, tag uint64, key string) {
	round.SetScript(writeThenRead, 1, 0)
	round.AppendString(key)
	round.TrackOn(w.subscriber, tag, []string{key})
}

// heldOnThree returns a Group of 3 real servers, each holding the key
// "lock", and a Subscriber of it that tracks keys.
func heldOnThree(t *testing.T) (*mux.Group, []*redistest.Server, *watcher) {
	t.Helper()
	redistest.RequireReal(t)
	group, servers := newGroup(t, 3)
	w := watch(t, group)
	w.connected(t, 3)
	for _, server := range servers {
		outside(t, server, "SET", "lock", "token", "PX", "60000")
	}
	return group, servers, w
}

// A tracked round goes over the subscription connections, and its own
// write reports nothing there (NOLOOP): after two renewals, an outside
// change is the first report, under the second renewal's tag. Were the
// write made on another connection, or reported, the second renewal's
// write would first report the key under the first one's tag.
func TestTrackedRoundArmsItsKeysWithoutReportingItsOwnWrite(t *testing.T) {
	group, servers, w := heldOnThree(t)
	round := group.NewRound()
	for _, tag := range []uint64{1, 2} {
		trackedRenewal(round, w, tag, "lock")
		group.Send(round, time.Now().Add(5*time.Second))
		require.NoError(t, group.Wait(context.Background(), round, nil))
		for node := range servers {
			require.True(t, round.Tracked(node), "node %d was sent the round on its subscription connection", node)
			require.NoError(t, round.Err(node))
			require.Positive(t, round.Reply(node).Int)
		}
	}

	outside(t, servers[1], "DEL", "lock")
	assert.Equal(t, mux.Invalidation{Node: 1, Key: "lock", Tag: 2, Cause: mux.InvalidatedKey}, receive(t, w.invalidations))
	select {
	case extra := <-w.invalidations:
		assert.Fail(t, "one change, one report", "also %+v", extra)
	default:
	}
}

// A tracked round waits for the reply of every server, though the tally
// was decided by the first: each reply arms the keys of its server, the
// last one's too.
func TestTrackedRoundWaitsForEveryReply(t *testing.T) {
	group, servers, w := heldOnThree(t)
	round := group.NewRound()
	trackedRenewal(round, w, 9, "lock")
	group.Send(round, time.Now().Add(5*time.Second))
	tally := &firstReplyTally{}
	require.NoError(t, group.Wait(context.Background(), round, tally))
	assert.Equal(t, 3, tally.counted, "every reply counted")
	for node := range servers {
		assert.False(t, round.Abandoned(node), "node %d", node)
	}

	for node, server := range servers {
		outside(t, server, "DEL", "lock")
		assert.Equal(t, mux.Invalidation{Node: node, Key: "lock", Tag: 9, Cause: mux.InvalidatedKey}, receive(t, w.invalidations))
	}
}

// A server whose subscription connection does not track (here, none
// does: the Subscriber reports no invalidations) is sent a tracked round
// on its own connection, as any round.
func TestTrackedRoundGoesAsUsualWhereNothingTracks(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 2)
	subscriber := group.Subscribe(mux.SubscribeOptions{})
	t.Cleanup(subscriber.Close)
	for _, server := range servers {
		outside(t, server, "SET", "lock", "token", "PX", "60000")
	}
	round := group.NewRound()
	round.SetScript(writeThenRead, 1, 0)
	round.AppendString("lock")
	round.TrackOn(subscriber, 1, []string{"lock"})
	group.Send(round, time.Now().Add(5*time.Second))
	require.NoError(t, group.Wait(context.Background(), round, nil))
	for node := range servers {
		assert.False(t, round.Tracked(node), "node %d", node)
		require.NoError(t, round.Err(node))
		assert.Positive(t, round.Reply(node).Int, "node %d", node)
	}
}

// firstReplyTally decides a round at its first reply, and counts the
// replies it is given.
type firstReplyTally struct{ counted int }

func (f *firstReplyTally) Count(node int, round *mux.Round) bool {
	f.counted++
	return true
}

// A tracked round decided without a server that does not answer leaves
// it shortly before the deadline: a wait past the deadline would fail
// that server's subscription connection, and with it every key armed
// there. Here the key armed on the paused server before the round is
// still reported as changed, not as disconnected, once it answers again.
func TestTrackedRoundLeavesALateServerItsConnection(t *testing.T) {
	group, servers, w := heldOnThree(t)
	last := len(servers) - 1
	outside(t, servers[last], "SET", "other", "value")
	w.track(t, last, 5, "other")
	round := group.NewRound()
	trackedRenewal(round, w, 9, "lock")
	servers[last].Stop()
	group.Send(round, time.Now().Add(300*time.Millisecond))
	require.NoError(t, group.Wait(context.Background(), round, &firstReplyTally{}))
	assert.True(t, round.Abandoned(last), "the paused server's reply was left")
	servers[last].Cont()

	outside(t, servers[last], "DEL", "other")
	assert.Equal(t, mux.Invalidation{Node: last, Key: "other", Tag: 5, Cause: mux.InvalidatedKey}, receive(t, w.invalidations))
}
