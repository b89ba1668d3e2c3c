package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fenced acquisition that every node granted, and whose fence commit no
// node confirmed (the keys were gone), fails with the commit's count: the
// error used to say "3 of 3 nodes" of a lock it did not get.
func TestFailedFenceCommitIsReported(t *testing.T) {
	var addresses []string
	for i := range 3 {
		runID := strings.Repeat(string(rune('a'+i)), 40)
		fake := redistest.NewFake(t, func(command []string) []byte {
			switch strings.ToUpper(command[0]) {
			case "HELLO":
				return []byte("%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n")
			case "INFO":
				return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte("# Server\r\nrun_id:" + runID + "\r\n")})
			case "CLIENT":
				return []byte("+OK\r\n")
			case "SCRIPT":
				return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte(protocol.NewScript(command[2]).SHA())})
			case "EVALSHA":
				switch command[1] {
				case protocol.AcquireFenced.SHA():
					return []byte("$1\r\n7\r\n") // granted, the counter at 7
				case protocol.CommitFence.SHA():
					return []byte(":0\r\n") // the key is no longer ours
				}
			case "EVAL":
				return []byte(":0\r\n") // the clean-up release
			}
			return []byte("-ERR unexpected command\r\n")
		})
		addresses = append(addresses, fake.Addr())
	}
	client, err := New(addresses, Options{Quarantine: QuarantineOff}) // the fakes keep no markers
	require.NoError(t, err)
	defer client.Close()
	err = client.NewMutex("committed", MutexOptions{Fencing: true}).TryLock(context.Background())
	require.ErrorIs(t, err, ErrNotAcquired)
	var failure *QuorumError
	require.True(t, errors.As(err, &failure))
	assert.Equal(t, 0, failure.Got, "%v", err)
	missing := 0
	for _, node := range failure.Nodes {
		if node.Outcome == OutcomeMissing {
			missing++
			continue
		}
		// The acquisition round, decided by two grants, did not wait for
		// the third: it was sent no commit.
		assert.Equal(t, OutcomeTimeout, node.Outcome, "%s: %v", node.Address, node.Err)
	}
	assert.GreaterOrEqual(t, missing, 2, "every node sent the commit answered that the key was gone: %v", err)
}
