package faultnet

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/resp"
)

const (
	// replyTimeout bounds the wait for bytes that must arrive. It is long:
	// it only matters when a test fails.
	replyTimeout = 5 * time.Second
	// silence is how long a client listens to conclude that nothing comes.
	silence = 100 * time.Millisecond
	// pingCommand and pong are PING and its reply, written by hand.
	pingCommand = "*1\r\n$4\r\nPING\r\n"
	pong        = "+PONG\r\n"
)

// client is a raw TCP client that writes RESP by hand and reads with
// deadlines.
type client struct {
	t       *testing.T
	conn    *net.TCPConn
	pending []byte // bytes read and not yet consumed
}

// dial connects a client to addr and closes it when the test ends.
func dial(t *testing.T, addr string) *client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, replyTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &client{t: t, conn: conn.(*net.TCPConn)}
}

// send writes raw bytes.
func (c *client) send(raw string) {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetWriteDeadline(time.Now().Add(replyTimeout)))
	_, err := c.conn.Write([]byte(raw))
	require.NoError(c.t, err)
}

// command writes one command as an array of bulk strings.
func (c *client) command(args ...string) {
	c.t.Helper()
	c.send(string(resp.AppendCommand(nil, args...)))
}

// fill reads once, with a deadline timeout from now, into pending.
func (c *client) fill(timeout time.Duration) error {
	if err := c.conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, err := c.conn.Read(buf)
	c.pending = append(c.pending, buf[:n]...)
	return err
}

// expect reads until it has len(want) bytes and checks that they are want.
func (c *client) expect(want string) {
	c.t.Helper()
	deadline := time.Now().Add(replyTimeout)
	for len(c.pending) < len(want) {
		require.NoError(c.t, c.fill(time.Until(deadline)), "got %q so far, want %q", c.pending, want)
	}
	got := string(c.pending[:len(want)])
	c.pending = c.pending[len(want):]
	require.Equal(c.t, want, got)
}

// frame reads one whole RESP frame and returns its bytes.
func (c *client) frame() []byte {
	c.t.Helper()
	deadline := time.Now().Add(replyTimeout)
	for {
		_, n, err := resp.Parse(c.pending, resp.Limits{})
		if err == nil {
			frame := append([]byte(nil), c.pending[:n]...)
			c.pending = c.pending[n:]
			return frame
		}
		require.ErrorIs(c.t, err, resp.ErrIncomplete)
		require.NoError(c.t, c.fill(time.Until(deadline)), "got %q so far", c.pending)
	}
}

// expectSilence checks that nothing arrives within silence: the read times
// out, rather than returning bytes, EOF or a reset.
func (c *client) expectSilence() {
	c.t.Helper()
	require.Empty(c.t, c.pending, "bytes arrived before the silence")
	err := c.fill(silence)
	assert.ErrorIs(c.t, err, os.ErrDeadlineExceeded)
	assert.Empty(c.t, c.pending, "bytes arrived during the silence")
}

// readToEnd reads until an error and returns every byte read with the error.
func (c *client) readToEnd() ([]byte, error) {
	deadline := time.Now().Add(replyTimeout)
	for {
		if err := c.fill(time.Until(deadline)); err != nil {
			return c.pending, err
		}
	}
}

// assertCut checks that err is what a client sees of a reset or closed link.
func assertCut(t *testing.T, err error) {
	t.Helper()
	assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF),
		"want a reset or EOF, got %v", err)
}

// waitFor polls condition until it holds or a bound passes. It is for states
// that have no event to wait on: goroutines that have exited, links counted
// down.
func waitFor(t *testing.T, what string, condition func() bool) {
	t.Helper()
	deadline := time.Now().Add(replyTimeout)
	for !condition() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitGoroutines waits until no more than want goroutines run, and dumps
// every goroutine's stack if they do not exit in time.
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(replyTimeout)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			stacks := make([]byte, 1<<20)
			stacks = stacks[:runtime.Stack(stacks, true)]
			t.Fatalf("%d goroutines run, want at most %d:\n%s", runtime.NumGoroutine(), want, stacks)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
