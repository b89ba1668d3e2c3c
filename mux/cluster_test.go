package mux_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/resp"
)

// clusterGroup starts a cluster of three masters and returns a connected
// Group whose one member is that cluster.
func clusterGroup(t *testing.T) (*mux.Group, *redistest.Cluster) {
	t.Helper()
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	group, err := mux.New([]string{cluster.Address()}, mux.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, group.Connect(ctx)[0])
	return group, cluster
}

// setOnce sends SET key value through the round and returns the member's
// answer.
func setOnce(t *testing.T, group *mux.Group, round *mux.Round, key, value string) string {
	t.Helper()
	round.SetCommand("SET", key, value)
	group.Send(round, time.Now().Add(5*time.Second))
	require.NoError(t, group.Wait(context.Background(), round, nil))
	require.NoError(t, round.Err(0))
	if reply := round.Reply(0); !reply.IsError() {
		return string(reply.Str)
	}
	return round.Reply(0).String()
}

// Each key's command goes to the master of its slot: every key is found
// on that master, and the keys spread over every master.
func TestClusterMemberRoutesBySlot(t *testing.T) {
	group, cluster := clusterGroup(t)
	round := group.NewRound()
	perMaster := map[string]int{}
	for i := range 200 {
		key := "routed:" + strconv.Itoa(i)
		require.Equal(t, "OK", setOnce(t, group, round, key, "v"+strconv.Itoa(i)))
		master := cluster.MasterOf(mux.Slot(key))
		assert.Equal(t, "v"+strconv.Itoa(i), master.Do(t, "GET", key), "key %s, slot %d", key, mux.Slot(key))
		perMaster[master.Addr()]++
	}
	assert.Len(t, perMaster, 3, "the keys spread over every master")
	assert.True(t, group.Connected(0))
}

// A slot that moved to another master after the map was read answers
// MOVED: the command is sent again to the new master, and the map learns.
// A slot being migrated answers ASK for a key it does not hold: the
// command goes, after ASKING, to the importing master, and Asked says so.
func TestClusterMemberFollowsRedirects(t *testing.T) {
	group, cluster := clusterGroup(t)
	round := group.NewRound()
	key := "moving"
	slot := mux.Slot(key)
	from := cluster.MasterOf(slot)
	to := cluster.Masters[0]
	if to == from {
		to = cluster.Masters[1]
	}
	toID := to.Do(t, "CLUSTER", "MYID")
	for _, server := range []*redistest.Server{to, from} {
		require.Equal(t, "OK", server.Do(t, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "NODE", toID))
	}
	require.Equal(t, "OK", setOnce(t, group, round, key, "moved"), "the MOVED was followed")
	assert.Equal(t, "moved", to.Do(t, "GET", key))
	assert.False(t, group.Asked(round, 0), "answered by the slot's master")

	// The slot goes back, by a migration that has not moved the key yet
	// and a key that is not on the source: ASK.
	askKey := "{moving}:asked"
	fromID := from.Do(t, "CLUSTER", "MYID")
	require.Equal(t, "OK", from.Do(t, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "IMPORTING", toID))
	require.Equal(t, "OK", to.Do(t, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "MIGRATING", fromID))
	require.Equal(t, "OK", setOnce(t, group, round, askKey, "asked"), "the ASK was followed")
	assert.True(t, group.Asked(round, 0), "answered by the importing master")
	keysIn := func(server *redistest.Server) string {
		return server.Do(t, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), "10")
	}
	assert.Contains(t, keysIn(from), askKey, "the importing master has it")
	assert.NotContains(t, keysIn(to), askKey, "the migrating master does not")
}

// Slot is Redis Cluster's key hash: CRC16 modulo 16384, of the hash tag
// when the key has one.
func TestSlot(t *testing.T) {
	for _, test := range []struct {
		key  string
		slot int
	}{
		{"123456789", 12739}, // the CRC16/XMODEM check value, 0x31C3
		{"foo", 12182},
		{"{user1000}.following", mux.Slot("user1000")},
		{"a{}b", mux.Slot("a{}b")},
		{"{}{x}", mux.Slot("{}{x}")},
		{"x{y}{z}", mux.Slot("y")},
	} {
		assert.Equal(t, test.slot, mux.Slot(test.key), fmt.Sprintf("%q", test.key))
	}
	assert.NotEqual(t, mux.Slot("{}{x}"), mux.Slot("x"), "an empty first tag hashes the whole key")
}

// A cluster member reads its slot map at its first command, as a
// connection dials at its first: the first round needs no Connect. When
// no node of the address answers, the round fails as for a server that is
// down (ErrNotConnected: the command was not sent), and the rounds right
// after it fail at once, while the map is read again in the background.
func TestClusterMemberReadsItsMapAtFirstUse(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	group, err := mux.New([]string{cluster.Address()}, mux.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	assert.Equal(t, "OK", setOnce(t, group, group.NewRound(), "first", "use"))

	down, err := mux.New([]string{"redis-cluster://" + redistest.ClosedAddress(t)}, mux.Options{DialTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { down.Close() })
	round := down.NewRound()
	for _, want := range []string{"connection refused", "the last reading failed"} {
		round.SetCommand("SET", "k", "v")
		down.Send(round, time.Now().Add(5*time.Second))
		require.NoError(t, down.Wait(context.Background(), round, nil))
		require.ErrorIs(t, round.Err(0), mux.ErrNotConnected)
		assert.Contains(t, round.Err(0).Error(), want)
	}
}

// A master that crashes is replaced by its replica once the cluster fails
// over, and nobody answers MOVED for its slots: the member reads its map
// again when a master cannot be reached, and the slots' commands go to the
// promoted replica. Until then, they fail as for a server that is down.
func TestClusterMemberFollowsACrashFailover(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, true, redistest.Options{})
	group, err := mux.New([]string{cluster.Address()}, mux.Options{DialTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	round := group.NewRound()
	key := "crashing"
	crashed := slices.Index(cluster.Masters, cluster.MasterOf(mux.Slot(key)))
	require.Equal(t, "OK", setOnce(t, group, round, key, "before"))

	promoted := cluster.Crash(crashed)
	var last error
	for deadline := time.Now().Add(20 * time.Second); ; {
		round.SetCommand("SET", key, "after")
		group.Send(round, time.Now().Add(5*time.Second))
		require.NoError(t, group.Wait(context.Background(), round, nil))
		if last = round.Err(0); last == nil {
			break
		}
		require.False(t, time.Now().After(deadline), "the member still fails after the failover: %v", last)
	}
	assert.Equal(t, "OK", string(round.Reply(0).Str))
	assert.Equal(t, "after", promoted.Do(t, "GET", key), "the promoted replica took the command")
}

// shardSubscriber subscribes a cluster member, node 0 of group, to channel
// with SSUBSCRIBE, on each OnConnect and after each SUNSUBSCRIBE push, as a
// waiter that still waits does, and returns the Subscriber and a function
// that waits for a push, rendered as "kind channel [message]".
func shardSubscriber(t *testing.T, group *mux.Group, channel string) (*mux.Subscriber, func(want string)) {
	subscribe := resp.AppendCommand(nil, "SSUBSCRIBE", channel)
	pushes := make(chan string, 64)
	ready := make(chan struct{}) // the handlers use s once it is set
	var s *mux.Subscriber
	s = group.Subscribe(mux.SubscribeOptions{
		OnConnect: func(node int) {
			<-ready
			s.SendTo(node, subscribe)
		},
		OnPush: func(node int, push resp.Value) {
			kind := string(push.Elems[0].Str)
			if kind == "sunsubscribe" {
				s.SendTo(node, subscribe)
			}
			message := kind + " " + string(push.Elems[1].Str)
			if kind == "smessage" {
				message += " " + string(push.Elems[2].Str)
			}
			pushes <- message
		},
		OnUnavailable: func(node int, err error) { t.Errorf("unavailable: %v", err) },
	})
	close(ready)
	t.Cleanup(s.Close)
	expect := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case got := <-pushes:
				if got == want {
					return
				}
			case <-timeout:
				t.Fatalf("no %q", want)
			}
		}
	}
	expect("ssubscribe " + channel) // the first OnConnect dialled the slot's master, whose own subscribed
	return s, expect
}

// A cluster member's push commands go to the master of their first
// channel's slot, where sharded pub/sub lives: an SSUBSCRIBE is confirmed
// by that master and hears its SPUBLISH. When the slot moves, the old
// master ends the subscription (an SUNSUBSCRIBE push), the subscription
// made again meets a MOVED, and the member makes its subscriptions again
// on the new master (OnConnect), which then delivers.
func TestClusterSubscriberFollowsTheSlot(t *testing.T) {
	group, cluster := clusterGroup(t)
	channel := "lockmux:released:{moving}x"
	slot := mux.Slot(channel)
	_, expect := shardSubscriber(t, group, channel)
	from := cluster.MasterOf(slot)
	from.Do(t, "SPUBLISH", channel, "one")
	expect("smessage " + channel + " one")

	to := cluster.Masters[0]
	if to == from {
		to = cluster.Masters[1]
	}
	cluster.MoveSlot(slot, to)
	expect("sunsubscribe " + channel)
	expect("ssubscribe " + channel)
	to.Do(t, "SPUBLISH", channel, "two")
	expect("smessage " + channel + " two")
}

// When the master of a subscription's slot crashes, the member reads its
// map again, finds the replica promoted, and makes its subscriptions again
// there.
func TestClusterSubscriberFollowsACrashFailover(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, true, redistest.Options{})
	group, err := mux.New([]string{cluster.Address()}, mux.Options{DialTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	channel := "lockmux:released:{crashing}x"
	_, expect := shardSubscriber(t, group, channel)
	promoted := cluster.Crash(slices.Index(cluster.Masters, cluster.MasterOf(mux.Slot(channel))))
	expect("ssubscribe " + channel)
	promoted.Do(t, "SPUBLISH", channel, "after")
	expect("smessage " + channel + " after")
}

// SlotTag gives every slot a hash tag of that slot, the smallest such
// number, so that every process names a slot's channel alike.
func TestSlotTag(t *testing.T) {
	for slot := range mux.SlotCount {
		if tag := mux.SlotTag(slot); mux.Slot("{"+tag+"}") != slot {
			t.Fatalf("slot %d: the tag %q is of slot %d", slot, tag, mux.Slot("{"+tag+"}"))
		}
	}
	assert.Equal(t, "0", mux.SlotTag(mux.Slot("0")))
	assert.Equal(t, "1", mux.SlotTag(mux.Slot("1")))
}

// A cluster member's keys are tracked on the subscription connection to
// the master of their slot, dialled at the first Track that needs it: a
// change of a key armed there is reported with its arming's tag, a flush
// of that master reports the keys armed on it, and the end of its
// connection (the master crashed) reports them too, while a key armed on
// another master stays armed.
func TestClusterSubscriberTracksKeysOnTheirMaster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, true, redistest.Options{})
	group, err := mux.New([]string{cluster.Address()}, mux.Options{DialTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	w := watch(t, group)
	w.connected(t, 1) // the member's first OnConnect
	keys := []string{"tracked:a", "tracked:b"}
	for mux.Slot(keys[1]) == mux.Slot(keys[0]) || cluster.MasterOf(mux.Slot(keys[1])) == cluster.MasterOf(mux.Slot(keys[0])) {
		keys[1] += "b"
	}
	arm := func(key string, tag uint64) {
		t.Helper()
		for {
			err := w.subscriber.Track(context.Background(), 0, mux.NewRequest("PTTL", key), tag, key)
			if err == nil {
				return
			}
			require.ErrorIs(t, err, mux.ErrNotConnected, "the master's connection is being dialled")
			receive(t, w.connects) // it tracks by its OnConnect
		}
	}
	for i, key := range keys {
		outside(t, cluster.MasterOf(mux.Slot(key)), "SET", key, "token")
		arm(key, uint64(i+1))
	}

	outside(t, cluster.MasterOf(mux.Slot(keys[0])), "PEXPIRE", keys[0], "100000")
	assert.Equal(t, mux.Invalidation{Node: 0, Key: keys[0], Tag: 1, Cause: mux.InvalidatedKey}, receive(t, w.invalidations))

	arm(keys[0], 3)
	outside(t, cluster.MasterOf(mux.Slot(keys[0])), "FLUSHALL")
	assert.Equal(t, mux.Invalidation{Node: 0, Key: keys[0], Tag: 3, Cause: mux.InvalidatedFlush}, receive(t, w.invalidations))

	crashed := slices.Index(cluster.Masters, cluster.MasterOf(mux.Slot(keys[1])))
	cluster.Masters[crashed].Kill9()
	gone := receive(t, w.invalidations)
	assert.Equal(t, keys[1], gone.Key)
	assert.Equal(t, uint64(2), gone.Tag)
	assert.Equal(t, mux.InvalidatedDisconnected, gone.Cause)
	select {
	case other := <-w.invalidations:
		t.Fatalf("a key of another master was reported: %+v", other)
	default:
	}
}

// A carried command that nobody waits for any more (a release whose round
// was decided without this member) still follows the redirect it meets:
// sent on a stale map to the slot's old master, its MOVED is followed by
// the member, and the command reaches the key on the new master.
func TestClusterMemberFollowsTheRedirectsOfCarriedCommands(t *testing.T) {
	group, cluster := clusterGroup(t)
	round := group.NewRound()
	key := "carried"
	slot := mux.Slot(key)
	require.Equal(t, "OK", setOnce(t, group, round, key, "held"))
	to := cluster.Masters[0]
	if to == cluster.MasterOf(slot) {
		to = cluster.Masters[1]
	}
	cluster.MoveSlot(slot, to) // the member's map still names the old master
	require.Equal(t, "held", to.Do(t, "GET", key), "the key moved with its slot")

	round.SetCommand("DEL", key)
	round.Carry(time.Now().Add(10*time.Second), "release")
	group.Send(round, time.Now().Add(time.Second))
	group.Discard(round) // nobody waits for it: the connection reads its reply after a second
	deadline := time.Now().Add(10 * time.Second)
	for to.Do(t, "EXISTS", key) != "0" {
		require.False(t, time.Now().After(deadline), "the carried DEL never reached the key's new master")
		time.Sleep(10 * time.Millisecond)
	}
}

// A command over two keys of a slot being migrated, one moved and not the
// other, meets ASK on the source and TRYAGAIN on the target, a passing
// state of the resharding: a carried command (a release) is tried again,
// with a backoff, until its keys have both moved and it reaches them.
func TestClusterMemberCarriesACommandThroughTryAgain(t *testing.T) {
	group, cluster := clusterGroup(t)
	round := group.NewRound()
	keys := []string{"{pair}:1", "{pair}:2"}
	slot := mux.Slot(keys[0])
	for _, key := range keys {
		require.Equal(t, "OK", setOnce(t, group, round, key, "held"))
	}
	to := cluster.Masters[0]
	if to == cluster.MasterOf(slot) {
		to = cluster.Masters[1]
	}
	migration := cluster.StartMigration(slot, to)
	migration.Move(keys[1])

	round.SetEval(mux.NewScript(`return redis.call("DEL", KEYS[1], KEYS[2])`), 2, 0)
	round.AppendString(keys[0])
	round.AppendString(keys[1])
	round.Carry(time.Now().Add(30*time.Second), "release")
	group.Send(round, time.Now().Add(time.Second))
	require.NoError(t, group.Wait(context.Background(), round, nil))
	require.NoError(t, round.Err(0))
	assert.Contains(t, round.Reply(0).String(), "TRYAGAIN", "the keys are split between the masters")

	migration.Move(keys[0])
	migration.Finish()
	deadline := time.Now().Add(10 * time.Second)
	for to.Do(t, "EXISTS", keys[0], keys[1]) != "0" {
		require.False(t, time.Now().After(deadline), "the carried command was dropped at its TRYAGAIN")
		time.Sleep(10 * time.Millisecond)
	}
}
