package mux_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// probeScript answers its key and the port of the server that ran it.
var probeScript = mux.NewScript(`return KEYS[1] .. "@" .. string.match(redis.call("INFO", "server"), "tcp_port:(%d+)")`)

// A round's follow-up on a cluster member reads the master that ran the
// round's command, with a key of that master's own: where the slot map
// sent it, where a MOVED sent it again, and where an ASK did, on the
// connection the command went on.
func TestClusterMemberFollowsUpOnTheMasterThatAnswered(t *testing.T) {
	group, cluster := clusterGroup(t)
	round := group.NewRound()
	round.SetFollowUp(probeScript, "probe")
	round.FollowUp = true
	key := "followed"
	slot := mux.Slot(key)
	// followedOn checks that the follow-up of SET key ran on master, with a
	// key of master's, and that Server names master.
	followedOn := func(master *redistest.Server, what string) {
		t.Helper()
		require.Equal(t, "OK", setOnce(t, group, round, key, what), what)
		reply, sent, err := round.FollowUpReply(0)
		require.True(t, sent, what)
		require.NoError(t, err, what)
		probed, port, found := strings.Cut(string(reply.Str), "@")
		require.True(t, found, "%s: %s", what, reply)
		assert.Equal(t, strconv.Itoa(master.Port()), port, what)
		assert.True(t, strings.HasPrefix(probed, "probe:{"), "%s: %s", what, probed)
		assert.Equal(t, master, cluster.MasterOf(mux.Slot(probed)), "%s: the follow-up's key is the master's", what)
		assert.Equal(t, master.Addr(), round.Server(0), what)
	}
	followedOn(cluster.MasterOf(slot), "routed by the map")

	to := cluster.Masters[0]
	if to == cluster.MasterOf(slot) {
		to = cluster.Masters[1]
	}
	cluster.MoveSlot(slot, to)
	followedOn(to, "after a MOVED")

	back := cluster.Masters[2]
	if back == to {
		back = cluster.Masters[1]
	}
	migration := cluster.StartMigration(slot, back)
	migration.Move(key)
	followedOn(back, "after an ASK")
	assert.True(t, group.Asked(round, 0))
	migration.MoveAll()
	migration.Finish()
}
