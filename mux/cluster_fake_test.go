package mux_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// fakeCluster starts a scripted one-master cluster that serves every slot
// and answers SET with TRYAGAIN, as a master importing a slot answers a
// command over keys it does not all have, until refusals SETs were
// refused; it returns the Group over it and the number of SETs received.
func fakeCluster(t *testing.T, refusals int64) (*mux.Group, *atomic.Int64) {
	var port atomic.Int64
	var sets atomic.Int64
	fake := redistest.NewFake(t, func(command []string) []byte {
		switch strings.ToUpper(command[0]) {
		case "HELLO":
			return []byte("%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n")
		case "INFO":
			return []byte("$20\r\n# Server\r\nrun_id:1\r\n\r\n")
		case "CLUSTER":
			node := "%4\r\n+port\r\n:" + strconv.FormatInt(port.Load(), 10) + "\r\n+endpoint\r\n+127.0.0.1\r\n+role\r\n+master\r\n+health\r\n+online\r\n"
			return []byte("*1\r\n%2\r\n+slots\r\n*2\r\n:0\r\n:16383\r\n+nodes\r\n*1\r\n" + node)
		case "SET":
			if sets.Add(1) <= refusals {
				return []byte("-TRYAGAIN Multiple keys request during rehashing of slot\r\n")
			}
			return []byte("+OK\r\n")
		}
		return []byte("-ERR unexpected command\r\n")
	})
	_, portText, _ := strings.Cut(fake.Addr(), ":")
	number, err := strconv.ParseInt(portText, 10, 64)
	require.NoError(t, err)
	port.Store(number)
	group, err := mux.New([]string{"redis-cluster://" + fake.Addr()}, mux.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	return group, &sets
}

// A command answered TRYAGAIN, a passing state of a slot migration, is
// sent again after a backoff: the caller gets the answer of the try that
// succeeded. A command refused on and on gets its TRYAGAIN after a
// bounded number of tries, well within its deadline.
func TestClusterMemberTriesAgainAfterTryAgain(t *testing.T) {
	tests := []struct {
		name      string
		refusals  int64
		wantReply string
	}{
		{name: "two refusals", refusals: 2, wantReply: "OK"},
		{name: "refused on and on", refusals: 1 << 40, wantReply: "TRYAGAIN Multiple keys request during rehashing of slot"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			group, sets := fakeCluster(t, test.refusals)
			round := group.NewRound()
			round.SetCommand("SET", "{pair}:1", "v")
			group.Send(round, time.Now().Add(5*time.Second))
			require.NoError(t, group.Wait(context.Background(), round, nil))
			require.NoError(t, round.Err(0))
			assert.Equal(t, test.wantReply, string(round.Reply(0).Str))
			assert.LessOrEqual(t, sets.Load(), int64(10), "the tries are bounded")
			assert.Greater(t, sets.Load(), int64(1), "tried again")
		})
	}
}
