package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// A delivered call (Call.Deliver) abandoned while its connection is being
// dialled is written when the dial completes, though its caller reused
// the Call at once; when the dial fails, it is dropped, never sent on a
// later connection.
func TestDeliveredCallAbandonedDuringADial(t *testing.T) {
	tests := []struct {
		name       string
		dialFails  bool
		wantOnNode string
	}{
		{name: "the dial completes: written", wantOnNode: "v"},
		{name: "the dial fails: dropped", dialFails: true, wantOnNode: "(nil)"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			server := redistest.Start(t, redistest.Options{})
			proxy := faultnet.New(t, server.Addr())
			c, err := conn.New(proxy.Addr(), conn.Options{DialTimeout: time.Minute}) // not connected yet
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			t.Cleanup(proxy.ReleaseReplies) // before the Conn closes: a dial held in its handshake would hold Close up
			ctx := context.Background()

			proxy.HoldReplies() // the dial that Send starts waits in its handshake
			call := &conn.Call{Command: resp.AppendCommand(nil, "SET", "delivered", "v"), Deliver: true}
			c.Send(call, time.Now().Add(time.Minute))
			c.Abandon(call)
			call.Reset() // the caller may reuse its Call at once
			call.Command = resp.AppendCommand(call.Command, "ECHO", "reused")
			if test.dialFails {
				require.Eventually(t, func() bool { return proxy.Links() == 1 }, 5*time.Second, time.Millisecond)
				proxy.CutLinks()
				require.Error(t, c.Connect(ctx), "the dial in progress fails")
			}
			proxy.ReleaseReplies()
			require.Eventually(t, func() bool { return c.Connect(ctx) == nil }, 5*time.Second, time.Millisecond)
			do(t, c, "PING") // after anything the new connection was given to write
			assert.Equal(t, test.wantOnNode, server.Do(t, "GET", "delivered"))
		})
	}
}
