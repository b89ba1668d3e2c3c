package conn_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// countScript is a follow-up that reads the server: how many keys it holds.
var countScript = conn.NewScript("return redis.call('DBSIZE')")

// followedPair returns a vote that sets key and a follow-up that reads
// the server with countScript.
func followedPair(key string) (*conn.Call, *conn.Call) {
	call := &conn.Call{Command: resp.AppendCommand(nil, "SET", key, "v", "NX")}
	follow := &conn.Call{}
	follow.SetScript(countScript, 1, 0)
	follow.Command = resp.AppendBulkString(follow.Command, "marker")
	return call, follow
}

// commandCalls returns how many times the server ran command since its
// statistics were reset.
func commandCalls(t *testing.T, server *redistest.Server, command string) int {
	t.Helper()
	info := server.Do(t, "INFO", "commandstats")
	for line := range strings.SplitSeq(info, "\n") {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+command+":calls="); found {
			calls, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			require.NoError(t, err)
			return calls
		}
	}
	return 0
}

// Follow-ups queued one after the other on a connection, before the write
// that carries them, are one read of the server: it comes after every
// vote queued with them, so it answers each of them.
func TestQueuedFollowUpsShareOneRead(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{Scripts: []*conn.Script{countScript}})
	server.Do(t, "CONFIG", "RESETSTAT")

	const votes = 8
	deadline := time.Now().Add(10 * time.Second)
	calls, follows := make([]*conn.Call, votes), make([]*conn.Call, votes)
	for i := range votes {
		calls[i], follows[i] = followedPair("k" + strconv.Itoa(i))
		c.QueueFollowed(calls[i], follows[i], deadline)
	}
	c.Flush()
	for i := range votes {
		c.Wait(context.Background(), calls[i])
		c.Wait(context.Background(), follows[i])
		require.NoError(t, calls[i].Err)
		require.NoError(t, follows[i].Err)
		assert.True(t, calls[i].Reply.IsOK(), "vote %d: %s", i, calls[i].Reply)
		assert.Equal(t, int64(votes), follows[i].Reply.Int, "follow-up %d read the server before the last vote: %s", i, follows[i].Reply)
		assert.Same(t, follows[i], calls[i].FollowedBy())
	}
	assert.Equal(t, 1, commandCalls(t, server, "evalsha"), "follow-ups the server ran")
	assert.Equal(t, votes, commandCalls(t, server, "set"), "votes the server ran")
}
