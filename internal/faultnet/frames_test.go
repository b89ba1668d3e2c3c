package faultnet

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// split feeds stream to a framer in the given chunks and returns the lengths
// of the frames it finds, and whether it broke.
func split(chunks [][]byte) (lengths []int, broken bool) {
	var f framer
	current := 0
	for _, data := range chunks {
		for len(data) > 0 {
			n := f.consume(data)
			data = data[n:]
			current += n
			if f.atStart() {
				lengths = append(lengths, current)
				current = 0
			}
		}
	}
	return lengths, f.broken
}

func TestFramerFindsFrames(t *testing.T) {
	frames := []string{
		"+OK\r\n",
		"-ERR wrong\r\n",
		":42\r\n",
		"$5\r\na\r\nbc\r\n", // a CRLF inside a bulk
		"$-1\r\n",
		"*-1\r\n",
		"*3\r\n$3\r\nfoo\r\n*2\r\n:1\r\n_\r\n$0\r\n\r\n",
		"_\r\n",
		"#t\r\n",
		",3.14\r\n",
		"(12345678901234567890\r\n",
		"!5\r\nERR x\r\n",
		"=7\r\ntxt:abc\r\n",
		"%1\r\n+key\r\n~2\r\n:1\r\n:2\r\n",
		"|1\r\n+ttl\r\n:3\r\n+annotated\r\n", // an attribute and the value it annotates
		">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n",
	}
	stream := []byte(strings.Join(frames, ""))
	want := make([]int, len(frames))
	for i, frame := range frames {
		want[i] = len(frame)
	}

	t.Run("whole", func(t *testing.T) {
		got, broken := split([][]byte{stream})
		assert.False(t, broken)
		assert.Equal(t, want, got)
	})
	t.Run("byte by byte", func(t *testing.T) {
		chunks := make([][]byte, len(stream))
		for i := range stream {
			chunks[i] = stream[i : i+1]
		}
		got, broken := split(chunks)
		assert.False(t, broken)
		assert.Equal(t, want, got)
	})
	t.Run("every split", func(t *testing.T) {
		for at := 1; at < len(stream); at++ {
			got, broken := split([][]byte{stream[:at], stream[at:]})
			require.False(t, broken, "split at %d", at)
			require.Equal(t, want, got, "split at %d", at)
		}
	})
}

func TestFramerBreaksOnGarbage(t *testing.T) {
	tests := []struct {
		name   string
		stream string
	}{
		{name: "unknown type", stream: "+OK\r\n?what\r\n"},
		{name: "bad length", stream: "$-2\r\n"},
		{name: "bare LF", stream: "+OK\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f framer
			data := []byte(tt.stream)
			for len(data) > 0 {
				data = data[f.consume(data):]
			}
			assert.True(t, f.broken)
			assert.False(t, f.atStart())
			assert.Equal(t, 3, f.consume([]byte("abc")), "unframed bytes pass")
		})
	}
}

// protocols are the two ways a client may talk to the server.
var protocols = []struct {
	name  string
	hello bool // send HELLO 3 first
}{
	{name: "RESP2"},
	{name: "RESP3", hello: true},
}

// handshake sends HELLO 3 when asked to and reads its reply, a map.
func handshake(t *testing.T, c *client, hello bool) {
	t.Helper()
	if !hello {
		return
	}
	c.command("HELLO", "3")
	require.Equal(t, byte('%'), c.frame()[0])
}

func TestDropReplies(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	for _, tt := range protocols {
		t.Run(tt.name, func(t *testing.T) {
			key := "dropped-" + tt.name
			proxy := New(t, server.Addr())
			c := dial(t, proxy.Addr())
			handshake(t, c, tt.hello)
			proxy.DropReplies(1)

			c.command("SET", key, "v")
			c.expectSilence()
			assert.Equal(t, "v", server.Do(t, "GET", key), "the server executed SET")

			c.command("GET", key)
			c.expect("$1\r\nv\r\n")
			assert.Equal(t, int64(1), proxy.RepliesDropped())
		})
	}
}

func TestDropRepliesDropsWholeFrames(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	for _, tt := range protocols {
		t.Run(tt.name, func(t *testing.T) {
			proxy := New(t, server.Addr())
			c := dial(t, proxy.Addr())
			handshake(t, c, tt.hello)
			proxy.DropReplies(3)

			var pipeline []byte // in one write
			pipeline = resp.AppendCommand(pipeline, "SET", "a", "1")
			pipeline = resp.AppendCommand(pipeline, "MGET", "a", "missing")  // an array holding a null
			pipeline = resp.AppendCommand(pipeline, "ECHO", "\r\n:1\r\n+OK") // a bulk that looks like frames
			c.send(string(pipeline) + pingCommand)

			c.expect(pong)
			assert.Equal(t, int64(3), proxy.RepliesDropped())
		})
	}
}

func TestDropRepliesForwardsPushes(t *testing.T) {
	const push = ">2\r\n$7\r\nmessage\r\n$2\r\nhi\r\n"
	fake := redistest.NewFake(t, func(command []string) []byte {
		return []byte(push + pong) // a push, then the reply
	})
	proxy := New(t, fake.Addr())
	c := dial(t, proxy.Addr())
	proxy.DropReplies(1)

	c.send(pingCommand)
	c.expect(push) // not a reply: neither dropped nor counted
	c.expectSilence()

	c.send(pingCommand)
	c.expect(push + pong)
	assert.Equal(t, int64(1), proxy.RepliesDropped())
}

func TestHoldReplies(t *testing.T) {
	tests := []struct {
		name    string
		release func(*Proxy)
	}{
		{name: "release", release: (*Proxy).ReleaseReplies},
		{name: "pass", release: (*Proxy).Pass},
	}
	server := redistest.Start(t, redistest.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := New(t, server.Addr())
			c := dial(t, proxy.Addr())
			proxy.HoldReplies()

			c.command("SET", "held-"+tt.name, "1")
			c.command("ECHO", "late")
			c.expectSilence()
			assert.Equal(t, "1", server.Do(t, "GET", "held-"+tt.name), "the server executed SET")

			tt.release(proxy)
			c.expect("+OK\r\n$4\r\nlate\r\n")
			c.send(pingCommand)
			c.expect(pong)
		})
	}
}

func TestHoldRepliesWaitsForServerClose(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	proxy := New(t, server.Addr())
	c := dial(t, proxy.Addr())
	proxy.HoldReplies()

	c.send(pingCommand)
	require.NoError(t, c.conn.CloseWrite()) // the server replies, then closes
	c.expectSilence()
	proxy.ReleaseReplies()

	got, err := c.readToEnd()
	assert.Equal(t, pong, string(got))
	assertCut(t, err)
}

func TestResetAfter(t *testing.T) {
	const reply = "$11\r\nhello world\r\n"
	tests := []struct {
		name  string
		bytes int
	}{
		{name: "before the first byte", bytes: 0},
		{name: "in the header", bytes: 2},
		{name: "in the payload", bytes: 9},
	}
	server := redistest.Start(t, redistest.Options{})
	server.Do(t, "SET", "greeting", "hello world")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := New(t, server.Addr())
			c := dial(t, proxy.Addr())
			c.send(pingCommand)
			c.expect(pong) // the count starts at the call
			proxy.ResetAfter(tt.bytes)

			c.command("GET", "greeting")
			got, err := c.readToEnd()

			assertCut(t, err)
			assert.True(t, strings.HasPrefix(reply, string(got)), "%q is not a prefix of %q", got, reply)
			assert.LessOrEqual(t, len(got), tt.bytes, "cut within the frame")
			waitFor(t, "the link to close", func() bool { return proxy.Links() == 0 })

			again := dial(t, proxy.Addr()) // it fired once
			again.command("GET", "greeting")
			again.expect(reply)
		})
	}
}

func TestInject(t *testing.T) {
	tests := []struct {
		name   string
		inject []string
	}{
		{name: "push", inject: []string{">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nlock\r\n"}},
		{name: "hostile", inject: []string{"$-2\r\n"}},
		{name: "appended", inject: []string{"+first\r\n", "+second\r\n"}},
		{name: "partial frame", inject: []string{"*3\r\n:1\r\n"}},
	}
	server := redistest.Start(t, redistest.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := New(t, server.Addr())
			c := dial(t, proxy.Addr())
			for _, b := range tt.inject {
				proxy.Inject([]byte(b))
			}

			c.send(pingCommand)
			c.expect(strings.Join(tt.inject, "") + pong)
			c.send(pingCommand)
			c.expect(pong) // injected once
		})
	}
}

func TestInjectWithHeldReply(t *testing.T) {
	const injected = "-ERR injected\r\n"
	server := redistest.Start(t, redistest.Options{})
	proxy := New(t, server.Addr())
	c := dial(t, proxy.Addr())
	proxy.HoldReplies()
	proxy.Inject([]byte(injected))

	c.send(pingCommand)
	c.expectSilence() // the injection waits with the reply it precedes
	proxy.ReleaseReplies()

	c.expect(injected + pong)
}
