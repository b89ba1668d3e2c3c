package redlock_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/resp"
)

// TestHostileNodeIsANodeErrorNotASuccess is RELIABILITY.md §9 seen from the
// lock: nodes that answer garbage after a normal handshake count as failed
// nodes, never as confirmations.
func TestHostileNodeIsANodeErrorNotASuccess(t *testing.T) {
	hostile := func(runID string, payload string) *redistest.Fake {
		return redistest.NewFake(t, func(command []string) []byte {
			switch strings.ToUpper(command[0]) {
			case "HELLO":
				return []byte("%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n")
			case "INFO":
				info := "# Server\r\nrun_id:" + runID + "\r\n"
				return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte(info)})
			case "AUTH", "CLIENT", "SELECT":
				return []byte("+OK\r\n")
			case "SCRIPT":
				return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte(mux.NewScript(command[2]).SHA())})
			}
			return []byte(payload) // a sane handshake, then garbage
		})
	}
	server := redistest.Start(t, redistest.Options{})
	t.Run("a minority of hostile nodes", func(t *testing.T) {
		second := redistest.Start(t, redistest.Options{})
		require.NoError(t, trustednodes.Trust(context.Background(), []string{server.Addr(), second.Addr()}, redlock.Options{}))
		fake := hostile(strings.Repeat("1", 40), "$-2\r\n")
		client, err := redlock.New([]string{server.Addr(), second.Addr(), fake.Addr()}, redlock.Options{})
		require.NoError(t, err)
		defer client.Close()
		m := client.NewMutex("lock:hostile-minority", redlock.MutexOptions{TTL: 5 * time.Second})
		require.NoError(t, m.Lock(context.Background()), "two sane nodes of three are a quorum")
		require.NoError(t, m.Unlock(context.Background()))
	})
	t.Run("a majority of hostile nodes", func(t *testing.T) {
		garbage := []string{"$-2\r\n", "+OK\n", "*4294967296\r\n"}
		addresses := []string{server.Addr()}
		for i, payload := range garbage {
			addresses = append(addresses, hostile(strings.Repeat(fmt.Sprint(i+2), 40), payload).Addr())
		}
		client, err := redlock.New(addresses, redlock.Options{})
		require.NoError(t, err)
		defer client.Close()
		m := client.NewMutex("lock:hostile-majority", redlock.MutexOptions{TTL: 5 * time.Second, MaxTries: 2})
		err = m.Lock(context.Background())
		require.Error(t, err, "garbage must never count as a confirmation")
		assert.ErrorIs(t, err, redlock.ErrNotAcquired)
		var quorum *redlock.QuorumError
		require.ErrorAs(t, err, &quorum)
		assert.Equal(t, 1, quorum.Got, "only the real node confirms")
		for _, node := range quorum.Nodes[1:] {
			assert.Contains(t, []redlock.Outcome{redlock.OutcomeError, redlock.OutcomeTimeout, redlock.OutcomeNotSent}, node.Outcome,
				"node %s: %v", node.Address, node.Err)
		}
		var protocolError *resp.ProtocolError
		assert.ErrorAs(t, err, &protocolError, "the parser's error is reachable through the quorum error")
		// The clean-up release is sent without waiting for its reply.
		released := false
		for deadline := time.Now().Add(5 * time.Second); !released && time.Now().Before(deadline); runtime.Gosched() {
			released = server.Do(t, "GET", "lock:hostile-majority") == "(nil)"
		}
		assert.True(t, released, "the failed attempt released the real node")
	})
}
