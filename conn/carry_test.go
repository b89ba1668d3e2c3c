package conn_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// A carried command whose connection goes silent (everything sent is lost)
// is sent again on a new connection once the server can be reached, by the
// Conn itself: nobody waits for it and nobody uses the Conn again.
func TestCarriedCommandIsSentAgainOnANewConnection(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	proxy := faultnet.New(t, server.Addr())
	c := newConn(t, proxy.Addr(), conn.Options{DialTimeout: 100 * time.Millisecond})

	proxy.Blackhole()
	call := &conn.Call{Command: resp.AppendCommand(nil, "SET", "carried", "v"), Carry: true,
		CarryUntil: time.Now().Add(time.Minute), Label: "carried"}
	c.Send(call, time.Now().Add(20*time.Millisecond))
	c.Abandon(call)
	call.Reset() // the caller may reuse its Call at once
	call.Command = resp.AppendCommand(call.Command, "ECHO", "reused")
	// The connection fails at the deadline; the dials time out while the
	// proxy swallows everything; then the proxy heals.
	time.Sleep(300 * time.Millisecond) // the scenario: a silent network for a while
	proxy.Heal()
	require.Eventually(t, func() bool { return server.Do(t, "GET", "carried") == "v" }, 5*time.Second, 5*time.Millisecond)
}

// A carried command that cannot be sent before CarryUntil is reported
// once, with its label, and dropped.
func TestCarriedCommandPastItsTimeIsReported(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	proxy := faultnet.New(t, server.Addr())
	var mu sync.Mutex
	var reports []conn.Unfinished
	reported := make(chan struct{}, 8)
	c := newConn(t, proxy.Addr(), conn.Options{DialTimeout: 50 * time.Millisecond, OnUnfinished: func(_ string, u conn.Unfinished) {
		mu.Lock()
		reports = append(reports, u)
		mu.Unlock()
		reported <- struct{}{}
	}})

	proxy.Blackhole()
	call := &conn.Call{Command: resp.AppendCommand(nil, "SET", "late", "v"), Carry: true,
		CarryUntil: time.Now().Add(200 * time.Millisecond), Label: "late"}
	c.Send(call, time.Now().Add(20*time.Millisecond))
	c.Abandon(call)
	select {
	case <-reported:
	case <-time.After(5 * time.Second):
		t.Fatal("the carried command past its time was not reported")
	}
	proxy.Heal()
	do(t, c, "PING") // the connection serves again
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, reports, 1)
	assert.Equal(t, "late", reports[0].Label)
	assert.Equal(t, "(nil)", server.Do(t, "GET", "late"), "a dropped command is not sent")
}

// A caller whose context ends returns at once with the context's error;
// another caller's call on the same connection is answered, and the
// connection stays up.
func TestImpatientCallerLeavesTheConnectionToOthers(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	proxy := faultnet.New(t, server.Addr())
	c := newConn(t, proxy.Addr(), conn.Options{})
	proxy.Delay(0, 200*time.Millisecond)

	patient := &conn.Call{Command: resp.AppendCommand(nil, "ECHO", "patient")}
	impatient := &conn.Call{Command: resp.AppendCommand(nil, "ECHO", "impatient")}
	deadline := time.Now().Add(5 * time.Second)
	c.Send(patient, deadline)
	c.Send(impatient, deadline)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	c.Wait(ctx, impatient) // reads first: its reply is behind the patient one
	assert.Equal(t, 2, conn.Pending(c), "the impatient caller returned before any reply came")
	assert.True(t, impatient.Abandoned())
	assert.ErrorIs(t, impatient.Err, context.DeadlineExceeded)

	c.Wait(context.Background(), patient)
	require.NoError(t, patient.Err)
	assert.Equal(t, "patient", string(patient.Reply.Str))
	assert.Equal(t, "pong", string(do(t, c, "ECHO", "pong").Str), "the connection serves on")
}
