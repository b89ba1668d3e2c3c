package conn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// pushKinds returns an OnPush that sends the kind of each push, and the
// channel of a message, to the returned channel.
func pushKinds() (func(resp.Value) error, chan string) {
	kinds := make(chan string, 8)
	return func(push resp.Value) error {
		if len(push.Elems) == 3 && string(push.Elems[0].Str) == "message" {
			kinds <- "message " + string(push.Elems[1].Str)
		} else if len(push.Elems) > 0 {
			kinds <- string(push.Elems[0].Str)
		}
		return nil
	}, kinds
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

// A SUBSCRIBE that the ACL refuses is answered with an error reply, not a
// push. On a connection read by Listen that error goes to the
// callback and the connection stays up; a subscription that is allowed
// still confirms, and its messages arrive, as pushes.
func TestListenHandsARefusalToItsCallback(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{ACLUsers: []string{"locker on >pw ~* +@all &allowed"}})
	onPush, pushes := pushKinds()
	subscriber := newConn(t, "redis://locker:pw@"+server.Addr(), conn.Options{OnPush: onPush})
	refusals := make(chan string, 4)
	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() {
		listened <- subscriber.Listen(ctx, func(refusal resp.Value) { refusals <- string(refusal.Str) })
	}()

	require.True(t, subscriber.SendPush(resp.AppendCommand(nil, "SUBSCRIBE", "refused")))
	assert.Contains(t, receive(t, refusals), "NOPERM")
	require.True(t, subscriber.SendPush(resp.AppendCommand(nil, "SUBSCRIBE", "allowed")))
	assert.Equal(t, "subscribe", receive(t, pushes), "the connection is still up, and subscribes")
	publisher := newConn(t, server.Addr(), conn.Options{})
	do(t, publisher, "PUBLISH", "allowed", "hello")
	assert.Equal(t, "message allowed", receive(t, pushes))
	assert.Equal(t, "pong", string(do(t, subscriber, "ECHO", "pong").Str), "a call is answered through the listener")

	cancel()
	require.ErrorIs(t, receive(t, listened), context.Canceled)
	assert.Equal(t, conn.ProtocolRESP3, subscriber.Protocol(), "stopping the listener keeps the connection")
	assert.Empty(t, refusals)
}

// Only an error reply is a refusal: any other reply that no command asked
// for still closes the connection (R13), under Listen as under Listen.
func TestListenClosesOnAnUnsolicitedReply(t *testing.T) {
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		if strings.EqualFold(command[0], "SUBSCRIBE") {
			return []byte("+OK\r\n")
		}
		return echoReply(command)
	})
	subscriber := newConn(t, fake.Addr(), conn.Options{})
	require.True(t, subscriber.SendPush(resp.AppendCommand(nil, "SUBSCRIBE", "news")))
	refused := false
	err := subscriber.Listen(context.Background(), func(resp.Value) { refused = true })
	require.ErrorIs(t, err, conn.ErrUnexpectedReply)
	assert.False(t, refused)
	assert.Zero(t, subscriber.Protocol(), "the connection must be closed")
}
