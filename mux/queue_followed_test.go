package mux_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// getScript reads its one key: the follow-up of the rounds below.
var getScript = mux.NewScript(`return redis.call("GET", KEYS[1])`)

// Rounds with a follow-up that are queued wait in the buffers as the
// others do: one Flush writes them all, a few writes per node, not a
// write per round (a renewer's batch of extensions, each a vote followed
// by the reading of the node's marker).
func TestQueuedFollowedRoundsWaitForOneFlush(t *testing.T) {
	if _, err := writeSyscalls(); err != nil {
		t.Skipf("no count of write system calls here: %v", err)
	}
	redistest.RequireReal(t) // an in-process server's writes would count too
	var addresses []string
	for _, server := range redistest.StartN(t, 3, redistest.Options{}) {
		addresses = append(addresses, server.Addr())
	}
	group, err := mux.New(addresses, mux.Options{Scripts: []*mux.Script{getScript}})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, err := range group.Connect(ctx) {
		require.NoError(t, err, "node %d", i)
	}
	const n = 200
	rounds := make([]*mux.Round, n)
	for i := range rounds {
		rounds[i] = group.NewRound()
		rounds[i].SetFollowUp(getScript, "followed:"+strconv.Itoa(i))
		rounds[i].FollowUp = true
		setNX(rounds[i], "followed:"+strconv.Itoa(i), "token"+strconv.Itoa(i))
	}

	before, err := writeSyscalls()
	require.NoError(t, err)
	for _, round := range rounds {
		group.Queue(round, time.Now().Add(5*time.Second))
	}
	group.Flush()
	after, err := writeSyscalls()
	require.NoError(t, err)
	// Fixed: one write per node, and a few of the runtime's own. A
	// write per round and node would be 3·n.
	assert.Less(t, after-before, uint64(n), "write system calls for %d followed rounds on 3 nodes", n)

	for i, round := range rounds {
		require.NoError(t, group.Wait(context.Background(), round, nil))
		for node := range group.Len() {
			require.True(t, round.Reply(node).IsOK(), "round %d, node %d: %s", i, node, round.Reply(node))
			follow, sent, err := round.FollowUpReply(node)
			require.True(t, sent)
			require.NoError(t, err)
			assert.Equal(t, "token"+strconv.Itoa(i), string(follow.Str), "round %d, node %d: the follow-up ran after the command", i, node)
		}
	}
}

// Rounds queued with the same follow-up share one reading per node: it
// runs after the last of their commands, and answers each of them.
func TestQueuedRoundsWithTheSameFollowUpShareOneReading(t *testing.T) {
	redistest.RequireReal(t) // counts the scripts the servers ran
	servers := redistest.StartN(t, 3, redistest.Options{})
	var addresses []string
	for _, server := range servers {
		addresses = append(addresses, server.Addr())
	}
	group, err := mux.New(addresses, mux.Options{Scripts: []*mux.Script{getScript}})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, err := range group.Connect(ctx) {
		require.NoError(t, err, "node %d", i)
	}
	for _, server := range servers {
		server.Do(t, "CONFIG", "RESETSTAT")
	}
	const n = 20
	rounds := make([]*mux.Round, n)
	for i := range rounds {
		rounds[i] = group.NewRound()
		rounds[i].SetFollowUp(getScript, "counter")
		rounds[i].FollowUp = true
		rounds[i].StartCommand(2, "INCR")
		rounds[i].AppendString("counter")
		group.Queue(rounds[i], time.Now().Add(5*time.Second))
	}
	group.Flush()
	for i, round := range rounds {
		require.NoError(t, group.Wait(context.Background(), round, nil))
		for node := range group.Len() {
			require.Equal(t, int64(i+1), round.Reply(node).Int, "round %d, node %d: %s", i, node, round.Reply(node))
			follow, sent, err := round.FollowUpReply(node)
			require.True(t, sent)
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(n), string(follow.Str), "round %d, node %d: the reading ran before the last command", i, node)
		}
	}
	for node, server := range servers {
		stats := server.Do(t, "INFO", "commandstats")
		assert.Contains(t, stats, "cmdstat_evalsha:calls=1,", "node %d ran one reading", node)
	}
}

// writeSyscalls returns the write system calls the process made so far
// (Linux's /proc/self/io).
func writeSyscalls() (uint64, error) {
	io, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(io) {
		if value, ok := bytes.CutPrefix(line, []byte("syscw: ")); ok {
			return strconv.ParseUint(string(bytes.TrimSpace(value)), 10, 64)
		}
	}
	return 0, os.ErrNotExist
}
