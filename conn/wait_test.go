package conn_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// countingContext is a context that can end and counts the functions
// registered on its end (context.AfterFunc asks it through its AfterFunc
// method) that are still registered.
type countingContext struct {
	context.Context
	done chan struct{}

	mu         sync.Mutex
	registered int
}

func newCountingContext() *countingContext {
	return &countingContext{Context: context.Background(), done: make(chan struct{})}
}

func (c *countingContext) Done() <-chan struct{} { return c.done }

func (c *countingContext) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// AfterFunc registers f, which this test context never calls, and returns
// the function that undoes the registration.
func (c *countingContext) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registered++
	stopped := false
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if stopped {
			return false
		}
		stopped = true
		c.registered--
		return true
	}
}

func (c *countingContext) live() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registered
}

// A context used for one call, as a caller's per-call timeout is, stays
// registered with the Conn no longer than the read: when the caller
// cancels it after the call, no goroutine starts to interrupt a reader
// that is done. A context used for read after read, as a service's
// long-lived one is, stays registered, so that its reads allocate nothing.
func TestReaderUnregistersAContextUsedOnce(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{})
	ping := func(ctx context.Context) {
		var call conn.Call
		call.Command = resp.AppendCommand(nil, "PING")
		require.NoError(t, c.Do(ctx, &call))
	}

	once := newCountingContext()
	ping(once)
	assert.Zero(t, once.live(), "registrations left on a context used for one call")

	reused := newCountingContext()
	for range 3 {
		ping(reused)
	}
	assert.Equal(t, 1, reused.live(), "a context used read after read stays registered")
	ping(newCountingContext())
	assert.Zero(t, reused.live(), "another context's read undoes the registration")
}
