package conn_test

import (
	"context"
	"errors"
	"os"
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

const fakeRunID = "0123456789abcdef0123456789abcdef01234567"

// handshakeReply answers the commands of a connection's handshake like a
// Redis server would; speaksRESP3 selects whether HELLO is known. It
// returns nil for any other command.
func handshakeReply(command []string, speaksRESP3 bool) []byte {
	switch strings.ToUpper(command[0]) {
	case "HELLO":
		if !speaksRESP3 {
			return []byte("-ERR unknown command 'HELLO', with args beginning with: '3'\r\n")
		}
		return []byte("%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n")
	case "INFO":
		info := "# Server\r\nrun_id:" + fakeRunID + "\r\n"
		return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte(info)})
	case "AUTH", "CLIENT", "SELECT":
		return []byte("+OK\r\n")
	case "SCRIPT":
		return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte(conn.NewScript(command[2]).SHA)})
	}
	return nil
}

// echoReply answers ECHO.
func echoReply(command []string) []byte {
	if strings.EqualFold(command[0], "ECHO") && len(command) == 2 {
		return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte(command[1])})
	}
	return []byte("-ERR unexpected command\r\n")
}

func echo(t *testing.T, c *conn.Conn, message string, timeout time.Duration) *conn.Call {
	t.Helper()
	call := &conn.Call{Command: resp.AppendCommand(nil, "ECHO", message)}
	c.Send(call, time.Now().Add(timeout))
	c.Wait(context.Background(), call)
	return call
}

// TestLateReplyIsNeverReadAsAnotherAnswer is RELIABILITY.md F30: a reply
// that arrives after its caller gave up must not be taken for the answer to
// the next command.
func TestLateReplyIsNeverReadAsAnotherAnswer(t *testing.T) {
	release := make(chan struct{})
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		if command[1] == "slow" {
			<-release
			return []byte("+OK\r\n") // what a late "SET NX" success would look like
		}
		return echoReply(command)
	})
	c := newConn(t, fake.Addr(), conn.Options{})

	slow := echo(t, c, "slow", 30*time.Millisecond)
	require.ErrorIs(t, slow.Err, os.ErrDeadlineExceeded)
	close(release)

	// No Connect: the next command waits for the new connection.
	fast := echo(t, c, "fast", 5*time.Second)
	require.NoError(t, fast.Err)
	assert.Equal(t, "fast", string(fast.Reply.Str), "the late +OK must not be read as this reply")
	assert.Equal(t, 2, fake.Accepted(), "the timed-out connection must have been replaced")
}

func TestRESP2FallbackWhenHelloIsUnknown(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	fake := redistest.NewFake(t, func(command []string) []byte {
		mu.Lock()
		seen = append(seen, strings.ToUpper(strings.Join(command, " ")))
		mu.Unlock()
		if reply := handshakeReply(command, false); reply != nil {
			return reply
		}
		return echoReply(command)
	})
	c := newConn(t, "redis://user:pw@"+fake.Addr()+"/2", conn.Options{ClientName: "lockmux-test"})
	assert.Equal(t, conn.ProtocolRESP2, c.Protocol())
	assert.Equal(t, fakeRunID, c.RunID())
	assert.Equal(t, "x", string(echo(t, c, "x", time.Second).Reply.Str))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		"HELLO 3 AUTH USER PW SETNAME LOCKMUX-TEST",
		"AUTH USER PW", "CLIENT SETNAME LOCKMUX-TEST",
		"SELECT 2", "INFO SERVER",
		"ECHO X",
	}, seen)
}

func TestRESP3RequiredButMissing(t *testing.T) {
	fake := redistest.NewFake(t, func(command []string) []byte { return handshakeReply(command, false) })
	c, err := conn.New(fake.Addr(), conn.Options{Protocol: conn.ProtocolRESP3})
	require.NoError(t, err)
	defer c.Close()
	err = c.Connect(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RESP3")
}

func TestPushFramesGoToTheHandler(t *testing.T) {
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		push := ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nfoo\r\n"
		return append([]byte(push), echoReply(command)...)
	})
	pushes := make(chan string, 4)
	c := newConn(t, fake.Addr(), conn.Options{OnPush: func(push resp.Value) error {
		pushes <- string(push.Elems[0].Str) + " " + string(push.Elems[1].Elems[0].Str)
		return nil
	}})
	call := echo(t, c, "hello", time.Second)
	require.NoError(t, call.Err)
	assert.Equal(t, "hello", string(call.Reply.Str))
	assert.Equal(t, "invalidate foo", <-pushes)
}

// A push that comes right after the caller's reply, in the same read, is
// handed to OnPush, and the caller returns: it does not stay to read
// frames that nobody awaits.
func TestPushAfterTheReplyDoesNotHoldTheCaller(t *testing.T) {
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		return append(echoReply(command), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nfoo\r\n"...)
	})
	pushes := make(chan string, 4)
	c := newConn(t, fake.Addr(), conn.Options{OnPush: func(push resp.Value) error {
		pushes <- string(push.Elems[1].Elems[0].Str)
		return nil
	}})
	calls := make(chan *conn.Call, 1)
	go func() { calls <- echo(t, c, "hello", time.Minute) }()
	call := receive(t, calls)
	require.NoError(t, call.Err)
	assert.Equal(t, "hello", string(call.Reply.Str))
	assert.Equal(t, "foo", receive(t, pushes))
}

func TestPushFrameOnRESP2IsAProtocolError(t *testing.T) {
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, false); reply != nil {
			return reply
		}
		return []byte(">2\r\n+message\r\n+x\r\n+OK\r\n")
	})
	c := newConn(t, fake.Addr(), conn.Options{})
	call := echo(t, c, "hello", time.Second)
	require.ErrorIs(t, call.Err, conn.ErrUnexpectedReply)
	assert.Zero(t, c.Protocol(), "the connection must be closed")
}

func TestUnsolicitedReplyClosesTheConnection(t *testing.T) {
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		reply := echoReply(command)
		if command[1] == "a" {
			reply = append(reply, "+OK\r\n"...) // one reply too many
		}
		return reply
	})
	c := newConn(t, fake.Addr(), conn.Options{})
	first := echo(t, c, "a", time.Second)
	require.NoError(t, first.Err)
	assert.Equal(t, "a", string(first.Reply.Str))
	// The extra +OK came with the reply; the reader finds it belongs to no
	// command and closes the connection. The next command goes out on a new
	// connection and must get its own reply, not the +OK.
	second := echo(t, c, "b", time.Second)
	require.NoError(t, second.Err)
	assert.Equal(t, "b", string(second.Reply.Str))
	assert.Equal(t, 2, fake.Accepted(), "the connection that saw the unsolicited reply must be replaced")
}

func TestHostileReplyIsAProtocolErrorAndClosesTheConnection(t *testing.T) {
	payloads := []struct {
		name    string
		payload string
	}{
		{name: "negative bulk length", payload: "$-2\r\n"},
		{name: "overflowing bulk length", payload: "$99999999999999999999\r\n"},
		{name: "huge bulk length", payload: "$9223372036854775807\r\n"},
		{name: "bad bulk terminator", payload: "$5\r\nhelloXX"},
		{name: "bad integer", payload: ":12a\r\n"},
		{name: "negative array length", payload: "*-5\r\n"},
		{name: "huge array length", payload: "*4294967296\r\n"},
		{name: "unknown type", payload: "?what\r\n"},
	}
	for _, test := range payloads {
		t.Run(test.name, func(t *testing.T) {
			fake := redistest.NewFake(t, func(command []string) []byte {
				if reply := handshakeReply(command, true); reply != nil {
					return reply
				}
				return []byte(test.payload)
			})
			c := newConn(t, fake.Addr(), conn.Options{})
			call := echo(t, c, "x", time.Second)
			require.Error(t, call.Err)
			var protocolError *resp.ProtocolError
			assert.True(t, errors.As(call.Err, &protocolError), "want a *resp.ProtocolError, got %v", call.Err)
			assert.Zero(t, c.Protocol(), "the connection must be closed")
		})
	}
}

func TestAbandonedReplyIsDroppedInOrder(t *testing.T) {
	release := make(chan struct{})
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, true); reply != nil {
			return reply
		}
		if command[1] == "first" {
			<-release
		}
		return echoReply(command)
	})
	c := newConn(t, fake.Addr(), conn.Options{})
	first := &conn.Call{Command: resp.AppendCommand(nil, "ECHO", "first")}
	c.Send(first, time.Now().Add(5*time.Second))
	c.Abandon(first)
	assert.True(t, first.Abandoned())

	second := &conn.Call{Command: resp.AppendCommand(nil, "ECHO", "second")}
	c.Send(second, time.Now().Add(5*time.Second))
	close(release)
	c.Wait(context.Background(), second)
	require.NoError(t, second.Err)
	assert.Equal(t, "second", string(second.Reply.Str))
	assert.Equal(t, 1, fake.Accepted(), "dropping a reply must not cost the connection")
}
