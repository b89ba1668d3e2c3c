package conn_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
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

// sharedRunServer is a fake server that answers SET with OK and counts
// the follow-ups ("GET marker") it is sent; answer gives their reply.
func sharedRunServer(t *testing.T, answer func(sets int) []byte) (*redistest.Fake, *atomic.Int32) {
	var sets, follows atomic.Int32
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		switch strings.ToUpper(command[0]) {
		case "SET":
			sets.Add(1)
			return []byte("+OK\r\n")
		case "GET":
			follows.Add(1)
			return answer(int(sets.Load()))
		}
		return []byte("-ERR unexpected command\r\n")
	})
	return fake, &follows
}

// queueShared queues votes pairs of a SET and the follow-up "GET marker"
// on c, and writes them in one write.
func queueShared(c *conn.Conn, votes int, deadline time.Time) ([]*conn.Call, []*conn.Call) {
	calls, follows := make([]*conn.Call, votes), make([]*conn.Call, votes)
	for i := range votes {
		calls[i] = &conn.Call{Command: resp.AppendCommand(nil, "SET", "k"+strconv.Itoa(i), "v")}
		follows[i] = &conn.Call{Command: resp.AppendCommand(nil, "GET", "marker")}
		c.QueueFollowed(calls[i], follows[i], deadline)
	}
	c.Flush()
	return calls, follows
}

// A follow-up that shares another's read ends as that read ends: with its
// reply, or with the failure that kept it (a closed connection, a server
// that does not answer in time, Close); an owner that stops waiting for
// its own follow-up leaves the others theirs.
func TestSharedFollowUpEndsAsItsReadEnds(t *testing.T) {
	const votes = 5
	integer := func(sets int) []byte { return []byte(":" + strconv.Itoa(sets) + "\r\n") }
	tests := []struct {
		name     string
		answer   func(sets int) []byte
		timeout  time.Duration
		abandon  int // the follow-up abandoned after the write; -1: none
		close    bool
		check    func(t *testing.T, follow *conn.Call)
		followUp int // follow-ups the server must have been sent
	}{
		{name: "reply", answer: integer, abandon: -1, followUp: 1,
			check: func(t *testing.T, follow *conn.Call) {
				require.NoError(t, follow.Err)
				assert.Equal(t, int64(votes), follow.Reply.Int, "read before the last vote: %s", follow.Reply)
			}},
		{name: "connection closed by the server", answer: func(int) []byte { return nil }, abandon: -1, followUp: 1,
			check: func(t *testing.T, follow *conn.Call) {
				require.Error(t, follow.Err)
				assert.False(t, follow.Abandoned())
			}},
		{name: "no reply by the deadline", answer: func(int) []byte { return []byte{} }, timeout: 200 * time.Millisecond, abandon: -1, followUp: 1,
			check: func(t *testing.T, follow *conn.Call) {
				require.ErrorIs(t, follow.Err, os.ErrDeadlineExceeded)
			}},
		{name: "Close", answer: func(int) []byte { return []byte{} }, abandon: -1, close: true,
			check: func(t *testing.T, follow *conn.Call) {
				require.ErrorIs(t, follow.Err, conn.ErrClosed)
			}},
		{name: "the first abandoned", answer: integer, abandon: 0, followUp: 1,
			check: func(t *testing.T, follow *conn.Call) {
				require.NoError(t, follow.Err)
				assert.Equal(t, int64(votes), follow.Reply.Int)
			}},
		{name: "one in the middle abandoned", answer: integer, abandon: votes / 2, followUp: 1,
			check: func(t *testing.T, follow *conn.Call) {
				require.NoError(t, follow.Err)
				assert.Equal(t, int64(votes), follow.Reply.Int)
			}},
		{name: "the last abandoned", answer: integer, abandon: votes - 1, followUp: 1,
			check: func(t *testing.T, follow *conn.Call) {
				require.NoError(t, follow.Err)
				assert.Equal(t, int64(votes), follow.Reply.Int)
			}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			fake, followUps := sharedRunServer(t, test.answer)
			c := newConn(t, fake.Addr(), conn.Options{})
			timeout := test.timeout
			if timeout == 0 {
				timeout = 10 * time.Second
			}
			calls, follows := queueShared(c, votes, time.Now().Add(timeout))
			if test.abandon >= 0 {
				c.Abandon(follows[test.abandon])
			}
			if test.close {
				// Waits for nothing: no carried command is pending.
				require.NoError(t, c.Close())
			}
			for i := range votes {
				c.Wait(context.Background(), calls[i])
				c.Wait(context.Background(), follows[i])
				if i == test.abandon {
					assert.True(t, follows[i].Abandoned())
					continue
				}
				t.Run("follow-up "+strconv.Itoa(i), func(t *testing.T) { test.check(t, follows[i]) })
			}
			if !test.close {
				assert.Equal(t, int32(test.followUp), followUps.Load(), "follow-ups sent")
			}
			assert.Zero(t, conn.Pending(c), "entries left in the queue")
		})
	}
}

// A command sent behind followed votes whose follow-up is not written yet
// goes in before it: the one read of the follow-ups is still the last.
func TestCommandSentBehindAnUnwrittenFollowUpGoesBeforeIt(t *testing.T) {
	fake, followUps := sharedRunServer(t, func(sets int) []byte { return []byte(":" + strconv.Itoa(sets) + "\r\n") })
	c := newConn(t, fake.Addr(), conn.Options{})
	deadline := time.Now().Add(10 * time.Second)
	first, firstFollow := &conn.Call{Command: resp.AppendCommand(nil, "SET", "a", "v")}, &conn.Call{Command: resp.AppendCommand(nil, "GET", "marker")}
	c.QueueFollowed(first, firstFollow, deadline)
	plain := &conn.Call{Command: resp.AppendCommand(nil, "SET", "b", "v")}
	assert.True(t, c.Send(plain, deadline), "buffered behind the pair")
	second, secondFollow := &conn.Call{Command: resp.AppendCommand(nil, "SET", "c", "v")}, &conn.Call{Command: resp.AppendCommand(nil, "GET", "marker")}
	c.QueueFollowed(second, secondFollow, deadline)
	c.Flush()
	for _, call := range []*conn.Call{first, firstFollow, plain, second, secondFollow} {
		c.Wait(context.Background(), call)
		require.NoError(t, call.Err)
	}
	assert.True(t, first.Reply.IsOK())
	assert.True(t, plain.Reply.IsOK(), "reply %s", plain.Reply)
	assert.True(t, second.Reply.IsOK())
	assert.Equal(t, int64(3), firstFollow.Reply.Int, "reply %s", firstFollow.Reply)
	assert.Equal(t, int64(3), secondFollow.Reply.Int, "reply %s", secondFollow.Reply)
	assert.Equal(t, int32(1), followUps.Load(), "follow-ups sent")
}

// A followed script call that meets NOSCRIPT with nothing behind it but
// the follow-up it shares with earlier votes is replayed as EVAL, and its
// own follow-up is read again after the replay; the earlier votes' keep
// the first read, which came after them.
func TestScriptReplayedBehindASharedFollowUpIsReadAgain(t *testing.T) {
	c, call := flushedScriptCall(t) // sets k to v
	deadline := time.Now().Add(10 * time.Second)
	earlier, earlierFollow := &conn.Call{Command: resp.AppendCommand(nil, "SET", "other", "v")}, &conn.Call{Command: resp.AppendCommand(nil, "DBSIZE")}
	c.QueueFollowed(earlier, earlierFollow, deadline)
	follow := &conn.Call{Command: resp.AppendCommand(nil, "DBSIZE")}
	c.QueueFollowed(call, follow, deadline)
	c.Flush()
	for _, each := range []*conn.Call{earlier, earlierFollow, call, follow} {
		c.Wait(context.Background(), each)
		require.NoError(t, each.Err)
	}
	assert.Equal(t, int64(1), call.Reply.Int, "the script was not replayed: %s", call.Reply)
	assert.Equal(t, int64(1), earlierFollow.Reply.Int, "the earlier vote's follow-up: %s", earlierFollow.Reply)
	assert.Equal(t, int64(2), follow.Reply.Int, "the follow-up read the server before the replay: %s", follow.Reply)
}

// A followed script call that meets NOSCRIPT is not replayed when a
// command issued after it went in before its shared follow-up: the replay
// would run after that command.
func TestScriptIsNotReplayedAfterACommandThatWentBeforeItsFollowUp(t *testing.T) {
	c, call := flushedScriptCall(t) // sets k to v
	deadline := time.Now().Add(10 * time.Second)
	follow := &conn.Call{Command: resp.AppendCommand(nil, "DBSIZE")}
	c.QueueFollowed(call, follow, deadline)
	later := &conn.Call{Command: resp.AppendCommand(nil, "DEL", "k")}
	c.Send(later, deadline)
	c.Flush()
	for _, each := range []*conn.Call{call, later, follow} {
		c.Wait(context.Background(), each)
		require.NoError(t, each.Err)
	}
	assert.Equal(t, "NOSCRIPT", string(resp.ErrorCode(call.Reply.Str)), "reply %s", call.Reply)
	assert.True(t, do(t, c, "GET", "k").Null, "the script must not have run after the DEL issued later")
}
