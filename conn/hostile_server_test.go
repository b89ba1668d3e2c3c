package conn_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// The hostile server of RELIABILITY.md §9: a scripted fake that completes
// a normal handshake, then answers a command with each payload of §9.1 and
// one payload per rule of §9.2 that applies to a client. The client must
// return a typed error, close the connection (and dial a new one for the
// next command), never panic, and never allocate from a declared length.

// outcome is what a hostile payload must cause.
type outcome int

const (
	// outcomeProtocol: a *resp.ProtocolError, the connection closed.
	outcomeProtocol outcome = iota
	// outcomeTooLarge: a *resp.ProtocolError wrapping resp.ErrTooLarge.
	outcomeTooLarge
	// outcomeTimeout: the frame never completes; the deadline ends the
	// call (os.ErrDeadlineExceeded) and the connection is closed. Never a
	// partial value.
	outcomeTimeout
	// outcomeUnexpected: conn.ErrUnexpectedReply, the connection closed.
	outcomeUnexpected
	// outcomeValue: a well-formed reply the client must accept: the value
	// "x", with the connection kept.
	outcomeValue
	// outcomeServerError: an error reply, which is a value and not a
	// transport failure: the connection is kept.
	outcomeServerError
)

// hostileCase is one payload.
type hostileCase struct {
	name    string
	payload string
	want    outcome
	resp2   bool // the connection speaks RESP2
	// maxAlloc bounds the bytes allocated by the call, for payloads that
	// declare far more than they send. Zero means 1 MiB.
	maxAlloc uint64
}

// repeat returns s n times.
func repeat(s string, n int) string { return strings.Repeat(s, n) }

func hostileCases() []hostileCase {
	const mib = 1 << 20
	return []hostileCase{
		// §9.1, the payloads that crashed or exhausted other Go clients.
		{name: "9.1 negative bulk length", payload: "$-2\r\n", want: outcomeProtocol},
		{name: "9.1 overflowing bulk length", payload: "$99999999999999999999\r\n", want: outcomeProtocol},
		{name: "9.1 bulk length of max int64", payload: "$9223372036854775807\r\n", want: outcomeTooLarge, maxAlloc: mib},
		{name: "9.1 truncated bulk", payload: "$5\r\nhello", want: outcomeTimeout},
		{name: "9.1 bad bulk terminator", payload: "$5\r\nhelloXX", want: outcomeProtocol},
		{name: "9.1 bad integer", payload: ":12a\r\n", want: outcomeProtocol},
		{name: "9.1 negative array length", payload: "*-5\r\n", want: outcomeProtocol},
		{name: "9.1 array length of 2^32", payload: "*4294967296\r\n", want: outcomeTooLarge, maxAlloc: mib},
		{name: "9.1 nesting 200000 deep", payload: repeat("*1\r\n", 200000) + ":1\r\n", want: outcomeTooLarge, maxAlloc: mib},
		{name: "9.1 push on RESP2", payload: ">2\r\n+pub\r\n+x\r\n$1\r\nv\r\n", want: outcomeUnexpected, resp2: true},
		{name: "9.1 attribute before the reply", payload: "|1\r\n+a\r\n+b\r\n$1\r\nx\r\n", want: outcomeValue},

		// R1 bulk length beyond the limit, or negative other than -1.
		{name: "R1 bulk length -0", payload: "$-0\r\n", want: outcomeProtocol},
		{name: "R1 bulk length over 1 MiB", payload: "$2000000\r\n", want: outcomeTooLarge, maxAlloc: mib},
		{name: "R1 bulk error over 1 MiB", payload: "!2000000\r\n", want: outcomeTooLarge, maxAlloc: mib},
		// R2 a declared length far above what arrives: no allocation up front.
		{name: "R2 1 MB declared, 100 bytes sent", payload: "$1000000\r\n" + repeat("a", 100), want: outcomeTimeout, maxAlloc: 256 << 10},
		// R3 aggregate counts.
		{name: "R3 array over the limit", payload: "*2000\r\n", want: outcomeTooLarge},
		{name: "R3 map whose pairs exceed the limit", payload: "%600\r\n", want: outcomeTooLarge},
		{name: "R3 set of negative length", payload: "~-1\r\n", want: outcomeProtocol},
		{name: "R3 map of length -1", payload: "%-1\r\n", want: outcomeProtocol},
		// The elements parsed before the limit trips are real allocations,
		// bounded by MaxTotalElements (4096 Values of 72 bytes, with the
		// slices' growth), not by the 5005 declared.
		{name: "R3 total elements of a reply", payload: "*5\r\n" + repeat("*1000\r\n"+repeat(":1\r\n", 1000), 5), want: outcomeTooLarge, maxAlloc: 2 * mib},
		// R4 nesting.
		{name: "R4 depth 17", payload: repeat("*1\r\n", 17) + ":1\r\n", want: outcomeTooLarge},
		// R5 integers and lengths.
		{name: "R5 plus sign", payload: ":+5\r\n", want: outcomeProtocol},
		{name: "R5 space", payload: ": 5\r\n", want: outcomeProtocol},
		{name: "R5 leading zero", payload: ":05\r\n", want: outcomeProtocol},
		{name: "R5 empty", payload: ":\r\n", want: outcomeProtocol},
		{name: "R5 minus alone", payload: ":-\r\n", want: outcomeProtocol},
		{name: "R5 integer overflow", payload: ":99999999999999999999\r\n", want: outcomeProtocol},
		{name: "R5 bulk length with a leading zero", payload: "$05\r\nhello\r\n", want: outcomeProtocol},
		{name: "R5 array length with a leading zero", payload: "*01\r\n:1\r\n", want: outcomeProtocol},
		// R6 line endings.
		{name: "R6 bare LF", payload: "+OK\n+OK\r\n", want: outcomeProtocol},
		{name: "R6 CR inside a simple string", payload: "+O\rK\r\n", want: outcomeProtocol},
		{name: "R6 CR inside an error", payload: "-ERR a\rb\r\n", want: outcomeProtocol},
		{name: "R6 bulk followed by LF LF", payload: "$5\r\nhello\n\n", want: outcomeProtocol},
		// R7 overlong line, without a CRLF.
		{name: "R7 line over 64 KiB", payload: "+" + repeat("a", 70000), want: outcomeTooLarge, maxAlloc: mib},
		// R8 a frame that never completes.
		{name: "R8 truncated mid-payload", payload: "$5\r\nhel", want: outcomeTimeout},
		{name: "R8 truncated mid-array", payload: "*3\r\n:1\r\n:2\r\n", want: outcomeTimeout},
		// R9 unknown and streamed types.
		{name: "R9 unknown type byte", payload: "?what\r\n", want: outcomeProtocol},
		{name: "R9 streamed string", payload: "$?\r\n;4\r\nabcd\r\n;0\r\n", want: outcomeProtocol},
		{name: "R9 streamed array", payload: "*?\r\n:1\r\n.\r\n", want: outcomeProtocol},
		{name: "R9 stream chunk", payload: ";4\r\nabcd\r\n", want: outcomeProtocol},
		{name: "R9 stream end", payload: ".\r\n", want: outcomeProtocol},
		// R10 a push before the reply goes to OnPush (RESP3) or closes (RESP2).
		{name: "R10 push before the reply on RESP3", payload: ">2\r\n+pub\r\n+y\r\n$1\r\nx\r\n", want: outcomeValue},
		{name: "R10 push-looking frame on RESP2", payload: ">1\r\n+x\r\n", want: outcomeUnexpected, resp2: true},
		// R11 attributes under the same limits.
		{name: "R11 attribute over the limit", payload: "|600\r\n", want: outcomeTooLarge},
		{name: "R11 attribute nested too deep", payload: "|1\r\n+a\r\n" + repeat("*1\r\n", 17) + ":1\r\n$1\r\nx\r\n", want: outcomeTooLarge},
		// R12 type-specific grammar.
		{name: "R12 null with a payload", payload: "_x\r\n", want: outcomeProtocol},
		{name: "R12 boolean other than t or f", payload: "#x\r\n", want: outcomeProtocol},
		{name: "R12 double infinity spelled out", payload: ",infinity\r\n", want: outcomeProtocol},
		{name: "R12 hexadecimal double", payload: ",0x1p3\r\n", want: outcomeProtocol},
		{name: "R12 double over 326 bytes", payload: "," + repeat("1", 400) + "\r\n", want: outcomeTooLarge},
		{name: "R12 double NaN in capitals", payload: ",NaN\r\n", want: outcomeProtocol},
		{name: "R12 double nan with a payload", payload: ",-nan(1)\r\n", want: outcomeProtocol},
		// What a real server sends is accepted, however odd: a NaN with its
		// sign, a script's big_number of any text, an aggregate key.
		{name: "R12 negative nan in an attribute", payload: "|1\r\n+score\r\n,-nan\r\n$1\r\nx\r\n", want: outcomeValue},
		{name: "R12 big number of any text in an attribute", payload: "|1\r\n+n\r\n(123  123\r\n$1\r\nx\r\n", want: outcomeValue},
		{name: "R12 attribute with an aggregate key", payload: "|1\r\n*1\r\n:1\r\n:2\r\n$1\r\nx\r\n", want: outcomeValue},
		{name: "R12 verbatim shorter than its format", payload: "=3\r\nabc\r\n", want: outcomeProtocol},
		{name: "R12 verbatim without a colon", payload: "=5\r\nabcde\r\n", want: outcomeProtocol},
		// R14 a redirection is an error reply, never followed.
		{name: "R14 malformed MOVED", payload: "-MOVED abc 203.0.113.1:x\r\n", want: outcomeServerError},
	}
}

// hostileConn returns a Conn to a fake that completes the handshake and
// answers the first ECHO with payload, every later one normally.
func hostileConn(t *testing.T, payload string, resp2 bool) (*conn.Conn, *redistest.Fake) {
	t.Helper()
	var answered atomic.Bool
	hostile := []byte(payload) // made once, so that the server allocates nothing while measured
	fake := redistest.NewFake(t, func(command []string) []byte {
		if reply := handshakeReply(command, !resp2); reply != nil {
			return reply
		}
		if strings.EqualFold(command[0], "ECHO") && !answered.Swap(true) {
			return hostile
		}
		return echoReply(command)
	})
	protocol := conn.ProtocolRESP3
	if resp2 {
		protocol = conn.ProtocolRESP2
	}
	return newConn(t, fake.Addr(), conn.Options{Protocol: protocol, OnPush: func(resp.Value) error { return nil }}), fake
}

// allocatedBy returns the bytes allocated while f ran, by every goroutine.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestHostileServer(t *testing.T) {
	for _, test := range hostileCases() {
		t.Run(test.name, func(t *testing.T) {
			c, fake := hostileConn(t, test.payload, test.resp2)
			timeout := 2 * time.Second
			if test.want == outcomeTimeout {
				timeout = 200 * time.Millisecond
			}
			var call *conn.Call
			allocated := allocatedBy(func() {
				assert.NotPanics(t, func() { call = echo(t, c, "x", timeout) })
			})
			require.NotNil(t, call)
			maxAlloc := test.maxAlloc
			if maxAlloc == 0 {
				maxAlloc = 1 << 20
			}
			assert.Less(t, allocated, maxAlloc, "allocation must follow the bytes received, not a declared length")
			t.Logf("allocated %d bytes for a payload of %d bytes: %v", allocated, len(test.payload), call.Err)

			var protocolError *resp.ProtocolError
			switch test.want {
			case outcomeValue:
				require.NoError(t, call.Err)
				assert.Equal(t, "x", string(call.Reply.Str))
				assert.NotZero(t, c.Protocol(), "a valid reply keeps the connection")
				return
			case outcomeServerError:
				require.NoError(t, call.Err)
				assert.True(t, call.Reply.IsError(), "an error reply is a value: %v", call.Reply)
				assert.NotZero(t, c.Protocol(), "an error reply keeps the connection")
				return
			case outcomeProtocol:
				require.Error(t, call.Err)
				assert.True(t, errors.As(call.Err, &protocolError), "want a *resp.ProtocolError, got %v", call.Err)
			case outcomeTooLarge:
				require.Error(t, call.Err)
				assert.True(t, errors.As(call.Err, &protocolError), "want a *resp.ProtocolError, got %v", call.Err)
				assert.ErrorIs(t, call.Err, resp.ErrTooLarge)
			case outcomeTimeout:
				require.Error(t, call.Err)
				assert.ErrorIs(t, call.Err, os.ErrDeadlineExceeded)
				assert.Empty(t, call.Reply.Str, "never a partial value")
			case outcomeUnexpected:
				require.Error(t, call.Err)
				assert.ErrorIs(t, call.Err, conn.ErrUnexpectedReply)
			}
			assert.Zero(t, c.Protocol(), "the connection must be closed")

			// R15: the poisoned connection is never used again; the next
			// command goes out on a new one and gets its own reply.
			var next *conn.Call
			require.Eventually(t, func() bool {
				next = echo(t, c, "after", time.Second)
				return next.Err == nil
			}, 5*time.Second, 50*time.Millisecond, "the next command must succeed on a new connection")
			assert.Equal(t, "after", string(next.Reply.Str))
			assert.Equal(t, 2, fake.Accepted(), "the connection must have been replaced")
		})
	}
}

// TestHostileServerExtraReplyInTheSameWrite is R13: a reply that no command
// asked for, arriving with a real one, closes the connection.
func TestHostileServerExtraReplyInTheSameWrite(t *testing.T) {
	c, fake := hostileConn(t, "$1\r\nx\r\n+OK\r\n", false)
	first := echo(t, c, "x", time.Second)
	require.NoError(t, first.Err)
	assert.Equal(t, "x", string(first.Reply.Str))
	assert.Eventually(t, func() bool { return c.Protocol() == 0 }, time.Second, 5*time.Millisecond,
		"the unsolicited +OK must close the connection")
	second := echo(t, c, "y", time.Second)
	require.NoError(t, second.Err)
	assert.Equal(t, "y", string(second.Reply.Str), "the unsolicited +OK must never be read as the next reply")
	assert.Equal(t, 2, fake.Accepted())
}

// rawServer is a hand-written server for what redistest.Fake cannot do:
// writing bytes after a reply, when no command is pending. For each
// command it calls answer with the connection's writer; it completes the
// handshake like handshakeReply.
func rawServer(t *testing.T, answer func(command []string, w *bufio.Writer)) (string, *atomic.Int32) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var accepted atomic.Int32
	var wait sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		listener.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wait.Wait()
	})
	wait.Go(func() {
		for {
			c, err := listener.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wait.Go(func() {
				defer c.Close()
				reader := resp.NewReader(c, resp.Limits{})
				writer := bufio.NewWriter(c)
				for {
					value, err := reader.ReadReply()
					if err != nil {
						return
					}
					var command []string
					for _, element := range value.Elems {
						command = append(command, string(element.Str))
					}
					if reply := handshakeReply(command, true); reply != nil {
						writer.Write(reply)
					} else {
						answer(command, writer)
					}
					if writer.Flush() != nil {
						return
					}
				}
			})
		}
	})
	return listener.Addr().String(), &accepted
}

// TestHostileServerLateUnsolicitedReply is R13 when the extra reply comes
// on its own, after the real one was delivered and while no command is
// pending: it must not be taken for the answer to the next command. A
// "+OK" taken for the reply to SET NX would be a false acquisition.
func TestHostileServerLateUnsolicitedReply(t *testing.T) {
	firstDelivered, unsolicitedSent := make(chan struct{}), make(chan struct{})
	address, accepted := rawServer(t, func(command []string, w *bufio.Writer) {
		w.Write(echoReply(command))
		if len(command) == 2 && command[1] == "first" {
			w.Flush()
			<-firstDelivered
			w.WriteString("+OK\r\n") // unsolicited, on its own
			w.Flush()
			close(unsolicitedSent)
		}
	})
	c := newConn(t, address, conn.Options{})
	first := echo(t, c, "first", time.Second)
	require.NoError(t, first.Err)
	assert.Equal(t, "first", string(first.Reply.Str))
	close(firstDelivered)
	<-unsolicitedSent
	waitForUnread(t, c)

	second := echo(t, c, "second", time.Second)
	require.ErrorIs(t, second.Err, conn.ErrUnexpectedReply,
		"a reply that no command asked for must fail the connection, not answer the next command (got %q)", second.Reply.Str)
	third := echo(t, c, "third", time.Second)
	require.NoError(t, third.Err)
	assert.Equal(t, "third", string(third.Reply.Str))
	assert.Equal(t, int32(2), accepted.Load(), "the connection that saw the unsolicited reply was replaced")
}

// TestIdlePushIsHandledBeforeTheNextCommand: a RESP3 push that arrives
// while nothing is pending goes to OnPush when the next command is sent,
// and the command gets its own reply on the same connection.
func TestIdlePushIsHandledBeforeTheNextCommand(t *testing.T) {
	firstDelivered, pushSent := make(chan struct{}), make(chan struct{})
	address, accepted := rawServer(t, func(command []string, w *bufio.Writer) {
		w.Write(echoReply(command))
		if len(command) == 2 && command[1] == "first" {
			w.Flush()
			<-firstDelivered
			w.WriteString(">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$4\r\nnews\r\n")
			w.Flush()
			close(pushSent)
		}
	})
	var pushes atomic.Int32
	c := newConn(t, address, conn.Options{OnPush: func(value resp.Value) error {
		if len(value.Elems) == 3 && string(value.Elems[2].Str) == "news" {
			pushes.Add(1)
		}
		return nil
	}})
	require.NoError(t, echo(t, c, "first", time.Second).Err)
	close(firstDelivered)
	<-pushSent
	waitForUnread(t, c)

	second := echo(t, c, "second", time.Second)
	require.NoError(t, second.Err)
	assert.Equal(t, "second", string(second.Reply.Str))
	assert.Equal(t, int32(1), pushes.Load(), "the push reached OnPush")
	assert.Equal(t, int32(1), accepted.Load(), "a push does not cost the connection")
}

// waitForUnread waits until bytes the server sent have reached c's socket.
// On loopback they arrive within microseconds; the bound only keeps a
// broken test from hanging.
func waitForUnread(t *testing.T, c *conn.Conn) {
	t.Helper()
	for start := time.Now(); conn.Unread(c) == 0; runtime.Gosched() {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the server's bytes never reached the client's socket")
		}
	}
}
