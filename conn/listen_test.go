package conn_test

import (
	"context"
	"testing"

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
