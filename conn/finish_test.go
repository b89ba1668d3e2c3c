package conn_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// orderLog records, in order, the calls finished and the pushes handled
// by a Conn.
type orderLog struct {
	mu      sync.Mutex
	entries []string
	added   chan struct{} // rings after each entry
}

func (l *orderLog) add(entry string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, entry)
	select {
	case l.added <- struct{}{}:
	default:
	}
}

// wait returns the entries once there are n, and forgets them.
func (l *orderLog) wait(t *testing.T, n int) []string {
	t.Helper()
	for {
		l.mu.Lock()
		if len(l.entries) >= n {
			entries := l.entries
			l.entries = nil
			l.mu.Unlock()
			return entries
		}
		l.mu.Unlock()
		receive(t, l.added)
	}
}

// OnFinish is told of a reply before the push that came after it is
// handled, whoever reads: what lets a receiver of pushes tell which calls
// were answered before a push.
func TestOnFinishComesBeforeTheNextPush(t *testing.T) {
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		push := ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\n" + command[1] + "\r\n"
		return append(echoReply(command), push...)
	})
	log := orderLog{added: make(chan struct{}, 1)}
	c := newConn(t, fake.Addr(), conn.Options{
		OnPush: func(push resp.Value) error {
			log.add("push " + string(push.Elems[1].Elems[0].Str))
			return nil
		},
		OnFinish: func(call *conn.Call) { log.add("finished " + string(call.Reply.Str)) },
	})
	echo(t, c, "a", time.Second)
	echo(t, c, "b", time.Second)
	assert.Equal(t, []string{"finished a", "push a", "finished b", "push b"}, log.wait(t, 4), "callers reading for themselves")

	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- c.Listen(ctx, nil) }()
	echo(t, c, "c", time.Second)
	assert.Equal(t, []string{"finished c", "push c"}, log.wait(t, 2), "the listener")
	cancel()
	require.ErrorIs(t, <-listened, context.Canceled)
}

// A call that fails or is abandoned is finished too.
func TestOnFinishForFailedAndAbandonedCalls(t *testing.T) {
	release := make(chan struct{})
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		if command[1] == "slow" {
			<-release
		}
		return echoReply(command)
	})
	t.Cleanup(func() { close(release) })
	finished := make(chan *conn.Call, 4)
	c := newConn(t, fake.Addr(), conn.Options{OnFinish: func(call *conn.Call) { finished <- call }})

	ctx, cancel := context.WithCancel(context.Background())
	call := &conn.Call{Command: resp.AppendCommand(nil, "ECHO", "slow")}
	c.Send(call, time.Now().Add(time.Minute))
	cancel()
	c.Wait(ctx, call)
	assert.Same(t, call, receive(t, finished))
	assert.True(t, call.Abandoned())

	late := echo(t, c, "late", 20*time.Millisecond)
	assert.Same(t, late, receive(t, finished))
	assert.Error(t, late.Err, "the connection failed at the deadline")
}

// A push that OnPush refuses closes the connection with a typed error.
func TestRefusedPushClosesTheConnection(t *testing.T) {
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		return append([]byte(">1\r\n$5\r\nweird\r\n"), echoReply(command)...)
	})
	errWeird := errorString("weird push")
	c := newConn(t, fake.Addr(), conn.Options{OnPush: func(resp.Value) error { return errWeird }})
	call := echo(t, c, "a", time.Second)
	require.ErrorIs(t, call.Err, conn.ErrUnexpectedReply)
	assert.ErrorIs(t, call.Err, errWeird)
	assert.Zero(t, c.Protocol(), "the connection must be closed")
}

type errorString string

func (e errorString) Error() string { return string(e) }

// With NoDialOnSend only Connect dials: a Send while the connection is
// down fails at once, and nothing is dialled.
func TestNoDialOnSend(t *testing.T) {
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		if strings.EqualFold(command[0], "QUIT") {
			return nil // closes the connection
		}
		return echoReply(command)
	})
	c, err := conn.New(fake.Addr(), conn.Options{NoDialOnSend: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })

	early := echo(t, c, "early", time.Second)
	require.ErrorIs(t, early.Err, conn.ErrNotConnected)
	assert.Zero(t, fake.Accepted())

	require.NoError(t, c.Connect(context.Background()))
	assert.Equal(t, "on", string(echo(t, c, "on", time.Second).Reply.Str))
	quit := &conn.Call{Command: resp.AppendCommand(nil, "QUIT")}
	c.Send(quit, time.Now().Add(time.Second))
	c.Wait(context.Background(), quit)
	require.Error(t, quit.Err)

	after := echo(t, c, "after", time.Second)
	require.ErrorIs(t, after.Err, conn.ErrNotConnected)
	assert.Equal(t, 1, fake.Accepted(), "Send dialled nothing")
	require.NoError(t, c.Connect(context.Background()))
	assert.Equal(t, "again", string(echo(t, c, "again", time.Second).Reply.Str))
}

// Listen started while a caller reads its own reply takes over when that
// caller's turn ends, instead of failing.
func TestListenTakesOverFromAReadingCaller(t *testing.T) {
	received := make(chan struct{})
	release := make(chan struct{})
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		if command[1] == "slow" {
			close(received)
			<-release
			return append(echoReply(command), ">2\r\n$7\r\nmessage\r\n$5\r\nafter\r\n"...)
		}
		return echoReply(command)
	})
	pushes := make(chan string, 4)
	c := newConn(t, fake.Addr(), conn.Options{OnPush: func(push resp.Value) error {
		pushes <- string(push.Elems[1].Str)
		return nil
	}})
	slow := make(chan *conn.Call, 1)
	go func() { slow <- echo(t, c, "slow", 5*time.Second) }()
	<-received

	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- c.Listen(ctx, nil) }()
	close(release)
	assert.Equal(t, "slow", string(receive(t, slow).Reply.Str))
	assert.Equal(t, "after", receive(t, pushes))
	assert.Empty(t, listened, "the listener still listens")
	cancel()
	assert.ErrorIs(t, receive(t, listened), context.Canceled)
}
