package mux_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/resp"
)

// newGroup starts n servers and returns a connected Group over them.
func newGroup(t testing.TB, n int) (*mux.Group, []*redistest.Server) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	addresses := make([]string, n)
	for i, server := range servers {
		addresses[i] = server.Addr()
	}
	group, err := mux.New(addresses, conn.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, err := range group.Connect(ctx) {
		require.NoError(t, err, "node %d", i)
	}
	return group, servers
}

// setNX fills round with SET key token NX PX 10000 for every node.
func setNX(round *mux.Round, key, token string) {
	first := &round.Calls[0]
	first.Reset()
	first.Command = resp.AppendArrayHeader(first.Command, 6)
	first.Command = resp.AppendBulkString(first.Command, "SET")
	first.Command = resp.AppendBulkString(first.Command, key)
	first.Command = resp.AppendBulkString(first.Command, token)
	first.Command = resp.AppendBulkString(first.Command, "NX")
	first.Command = resp.AppendBulkString(first.Command, "PX")
	first.Command = resp.AppendBulkInt(first.Command, 10000)
	round.SetAll()
}

func TestRoundReachesEveryNode(t *testing.T) {
	group, servers := newGroup(t, 3)
	round := group.NewRound()

	setNX(round, "k", "a")
	group.Send(round, time.Now().Add(5*time.Second))
	group.Wait(context.Background(), round, nil)
	for i := range round.Calls {
		require.NoError(t, round.Calls[i].Err)
		assert.True(t, round.Calls[i].Reply.IsOK(), "node %d: %s", i, round.Calls[i].Reply)
		assert.Positive(t, round.Calls[i].Latency)
	}

	servers[1].Do(t, "SET", "other", "x")
	setNX(round, "k", "b")
	group.Send(round, time.Now().Add(5*time.Second))
	group.Wait(context.Background(), round, nil)
	for i := range round.Calls {
		assert.True(t, round.Calls[i].Reply.Null, "node %d: the key is held, SET NX must answer null", i)
	}
}

func TestPerNodeCommands(t *testing.T) {
	group, _ := newGroup(t, 3)
	round := group.NewRound()
	for i := range round.Calls {
		round.Calls[i].Reset()
		round.Calls[i].Command = resp.AppendCommand(round.Calls[i].Command, "ECHO", strconv.Itoa(i))
	}
	group.Send(round, time.Now().Add(5*time.Second))
	group.Wait(context.Background(), round, nil)
	for i := range round.Calls {
		assert.Equal(t, strconv.Itoa(i), string(round.Calls[i].Reply.Str))
	}
}

func TestStoppedNodeCostsOnlyTheDeadline(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 3)
	servers[0].Stop()
	defer servers[0].Cont()

	round := group.NewRound()
	setNX(round, "k", "a")
	start := time.Now()
	group.Send(round, start.Add(50*time.Millisecond))
	group.Wait(context.Background(), round, nil)
	elapsed := time.Since(start)

	assert.ErrorIs(t, round.Calls[0].Err, os.ErrDeadlineExceeded)
	assert.True(t, round.Calls[1].Reply.IsOK())
	assert.True(t, round.Calls[2].Reply.IsOK())
	assert.Less(t, elapsed, time.Second, "the stopped node must cost about its deadline, took %v", elapsed)
}

// quorumTally decides a round once enough nodes said OK.
type quorumTally struct{ need, got int }

func (q *quorumTally) Count(node int, call *conn.Call) bool {
	if call.Err == nil && call.Reply.IsOK() {
		q.got++
	}
	return q.got >= q.need
}

func TestTallyStopsEarlyAndTheRestIsDroppedSafely(t *testing.T) {
	redistest.RequireReal(t) // the third node is stopped with SIGSTOP
	group, servers := newGroup(t, 3)
	round := group.NewRound()
	setNX(round, "k", "a")
	servers[2].Stop() // its reply cannot have arrived when the round is decided
	group.Send(round, time.Now().Add(5*time.Second))
	tally := &quorumTally{need: 2}
	group.Wait(context.Background(), round, tally)
	assert.Equal(t, 2, tally.got)
	assert.True(t, round.Calls[2].Abandoned(), "the third reply was not needed")
	servers[2].Cont()

	// The abandoned reply must not be taken for the answer to the next
	// command on that node.
	for i := range round.Calls {
		round.Calls[i].Reset()
		round.Calls[i].Command = resp.AppendCommand(round.Calls[i].Command, "ECHO", "next")
	}
	group.Send(round, time.Now().Add(5*time.Second))
	group.Wait(context.Background(), round, nil)
	for i := range round.Calls {
		require.NoError(t, round.Calls[i].Err)
		assert.Equal(t, "next", string(round.Calls[i].Reply.Str), "node %d", i)
	}
}

func TestConcurrentRoundsGetTheirOwnReplies(t *testing.T) {
	group, _ := newGroup(t, 3)
	const goroutines, rounds = 32, 100
	var wait sync.WaitGroup
	failures := make(chan string, goroutines)
	for g := range goroutines {
		wait.Go(func() {
			round := group.NewRound()
			for r := range rounds {
				want := fmt.Sprintf("%d-%d", g, r)
				for i := range round.Calls {
					round.Calls[i].Reset()
					round.Calls[i].Command = resp.AppendCommand(round.Calls[i].Command, "ECHO", want+"-"+strconv.Itoa(i))
				}
				group.Send(round, time.Now().Add(5*time.Second))
				group.Wait(context.Background(), round, nil)
				for i := range round.Calls {
					if got := string(round.Calls[i].Reply.Str); got != want+"-"+strconv.Itoa(i) || round.Calls[i].Err != nil {
						failures <- fmt.Sprintf("goroutine %d node %d: got %q, err %v", g, i, got, round.Calls[i].Err)
						return
					}
				}
			}
		})
	}
	wait.Wait()
	close(failures)
	for failure := range failures {
		t.Error(failure)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	_, err := mux.New(nil, conn.Options{})
	assert.ErrorIs(t, err, mux.ErrNoNodes)
	_, err = mux.New([]string{"127.0.0.1:1", "ftp://x"}, conn.Options{})
	assert.ErrorIs(t, err, conn.ErrInvalidAddress)
}
