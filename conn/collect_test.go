package conn_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// Collect takes a reply that has arrived, without waiting for one that has
// not.
func TestCollectTakesAReplyThatArrived(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{})
	call := &conn.Call{Command: resp.AppendCommand(nil, "ECHO", "here")}
	c.Send(call, time.Now().Add(5*time.Second))
	waitForUnread(t, c)
	require.True(t, c.Collect(call))
	require.NoError(t, call.Err)
	assert.Equal(t, "here", string(call.Reply.Str))
	assert.Zero(t, conn.Pending(c))
}

// Collect reports false at once for a reply that has not arrived: the
// server is stopped.
func TestCollectDoesNotWait(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{})
	server.Stop()
	defer server.Cont()
	call := &conn.Call{Command: resp.AppendCommand(nil, "ECHO", "late")}
	c.Send(call, time.Now().Add(5*time.Second))
	assert.False(t, c.Collect(call))
	c.Abandon(call)
}

// Replies of abandoned calls do not pile up on a connection that nobody
// waits on: each Send first reads the ones that have arrived.
func TestAbandonedRepliesDoNotPileUp(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{})
	call := &conn.Call{}
	for i := range 200 {
		call.Command = resp.AppendCommand(call.Command[:0], "ECHO", "abandoned")
		c.Send(call, time.Now().Add(5*time.Second))
		waitForUnread(t, c)
		c.Abandon(call)
		require.LessOrEqual(t, conn.Pending(c), 2, "round %d", i)
	}
	next := echo(t, c, "next", 5*time.Second)
	require.NoError(t, next.Err)
	assert.Equal(t, "next", string(next.Reply.Str))
}
