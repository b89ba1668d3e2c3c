package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

func TestListenDeliversPubSubMessages(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	messages := make(chan string, 8)
	subscriber := newConn(t, server.Addr(), conn.Options{OnPush: func(push resp.Value) error {
		if len(push.Elems) == 3 && string(push.Elems[0].Str) == "message" {
			messages <- string(push.Elems[1].Str) + "=" + string(push.Elems[2].Str)
		} else if len(push.Elems) > 0 {
			messages <- string(push.Elems[0].Str)
		}
		return nil
	}})
	publisher := newConn(t, server.Addr(), conn.Options{})

	require.True(t, subscriber.SendPush(resp.AppendCommand(nil, "SUBSCRIBE", "news")))
	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- subscriber.Listen(ctx, nil) }()
	assert.Equal(t, "subscribe", <-messages, "the confirmation comes as a push")

	do(t, publisher, "PUBLISH", "news", "hello")
	assert.Equal(t, "news=hello", <-messages)

	// A command on the listening connection is answered through the
	// listener.
	assert.Equal(t, "pong", string(do(t, subscriber, "ECHO", "pong").Str))

	cancel()
	require.ErrorIs(t, <-listened, context.Canceled)
	assert.Equal(t, conn.ProtocolRESP3, subscriber.Protocol(), "stopping the listener keeps the connection")
	assert.Equal(t, "still", string(do(t, subscriber, "ECHO", "still").Str))
}

func TestSendPushNeedsRESP3(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{Protocol: conn.ProtocolRESP2})
	assert.False(t, c.SendPush(resp.AppendCommand(nil, "SUBSCRIBE", "news")))
	assert.Equal(t, "ok", string(do(t, c, "ECHO", "ok").Str), "nothing was sent")
}

// A push command that the server refuses, followed at once by a call: the
// refusal goes to Listen's handler, and the call gets its own reply, on a
// connection that stays up.
func TestRefusedPushCommandIsNotTakenForTheNextCallsReply(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{ACLUsers: []string{"nochannels on >pw ~* +@all resetchannels"}})
	c := newConn(t, server.Addr(), conn.Options{Username: "nochannels", Password: "pw", OnPush: func(resp.Value) error { return nil }})
	refusals := make(chan string, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listened := make(chan error, 1)
	go func() {
		listened <- c.Listen(ctx, func(refusal resp.Value) { refusals <- string(resp.ErrorCode(refusal.Str)) })
	}()
	for range 20 {
		require.True(t, c.SendPush(resp.AppendCommand(nil, "SUBSCRIBE", "news", "sports")))
		require.Equal(t, "pong", string(do(t, c, "ECHO", "pong").Str), "the call's own reply")
		select {
		case code := <-refusals:
			require.Equal(t, "NOPERM", code)
		case <-time.After(5 * time.Second):
			require.Fail(t, "the refusal was not reported")
		}
	}
	cancel()
	require.ErrorIs(t, <-listened, context.Canceled, "the connection stayed up")
}
