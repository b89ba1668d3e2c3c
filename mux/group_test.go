package mux_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/workgroup"
	"github.com/lockmux/lockmux/mux"
)

// newGroup starts n servers and returns a connected Group over them.
func newGroup(t testing.TB, n int) (*mux.Group, []*redistest.Server) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	addresses := make([]string, n)
	for i, server := range servers {
		addresses[i] = server.Addr()
	}
	group, err := mux.New(addresses, mux.Options{})
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
	round.StartCommand(6, "SET")
	round.AppendString(key)
	round.AppendString(token)
	round.AppendString("NX")
	round.AppendString("PX")
	round.AppendInt(10000)
}

func TestRoundReachesEveryNode(t *testing.T) {
	group, servers := newGroup(t, 3)
	round := group.NewRound()

	setNX(round, "k", "a")
	group.Send(round, time.Now().Add(5*time.Second))
	group.Wait(context.Background(), round, nil)
	for i := range group.Len() {
		require.NoError(t, round.Err(i))
		assert.True(t, round.Reply(i).IsOK(), "node %d: %s", i, round.Reply(i))
		assert.Positive(t, round.Latency(i))
	}

	servers[1].Do(t, "SET", "other", "x")
	setNX(round, "k", "b")
	group.Send(round, time.Now().Add(5*time.Second))
	group.Wait(context.Background(), round, nil)
	for i := range group.Len() {
		assert.True(t, round.Reply(i).Null, "node %d: the key is held, SET NX must answer null", i)
	}
}

// A node left out of a round is not sent its command, and Wait does not
// wait for it.
func TestSkippedNodeIsNotSent(t *testing.T) {
	group, servers := newGroup(t, 3)
	round := group.NewRound()
	round.SetCommand("SET", "skipped", "v")
	round.Skip(1)
	group.Send(round, time.Now().Add(5*time.Second))
	require.NoError(t, group.Wait(context.Background(), round, nil))
	assert.False(t, round.Sent(1))
	assert.Equal(t, "(nil)", servers[1].Do(t, "GET", "skipped"))
	assert.Equal(t, "v", servers[0].Do(t, "GET", "skipped"))

	group.Send(round, time.Now().Add(5*time.Second)) // Skip lasts one Send
	require.NoError(t, group.Wait(context.Background(), round, nil))
	assert.True(t, round.Sent(1))
	assert.Equal(t, "v", servers[1].Do(t, "GET", "skipped"))
}

// A request to one node is answered by that node alone; several requests
// go in one write.
func TestRequestsToOneNode(t *testing.T) {
	group, servers := newGroup(t, 2)
	servers[1].Do(t, "SET", "k", "one")
	get, echo := mux.NewRequest("GET", "k"), mux.NewRequest("ECHO", "x")
	require.NoError(t, group.Do(context.Background(), 1, get, echo))
	assert.Equal(t, "one", string(get.Reply().Str))
	assert.Equal(t, "x", string(echo.Reply().Str))
	require.NoError(t, group.Do(context.Background(), 0, get))
	assert.True(t, get.Reply().Null)
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

	assert.ErrorIs(t, round.Err(0), os.ErrDeadlineExceeded)
	assert.True(t, round.Reply(1).IsOK())
	assert.True(t, round.Reply(2).IsOK())
	assert.Less(t, elapsed, time.Second, "the stopped node must cost about its deadline, took %v", elapsed)
}

// quorumTally decides a round once enough nodes said OK.
type quorumTally struct{ need, got int }

func (q *quorumTally) Count(node int, round *mux.Round) bool {
	if round.Err(node) == nil && round.Reply(node).IsOK() {
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
	assert.True(t, round.Abandoned(2), "the third reply was not needed")
	servers[2].Cont()

	// The abandoned reply must not be taken for the answer to the next
	// command on that node.
	round.SetCommand("ECHO", "next")
	group.Send(round, time.Now().Add(5*time.Second))
	group.Wait(context.Background(), round, nil)
	for i := range group.Len() {
		require.NoError(t, round.Err(i))
		assert.Equal(t, "next", string(round.Reply(i).Str), "node %d", i)
	}
}

func TestConcurrentRoundsGetTheirOwnReplies(t *testing.T) {
	group, _ := newGroup(t, 3)
	const goroutines, rounds = 32, 100
	var callers workgroup.Group
	for g := range goroutines {
		callers.Go(func() error {
			round := group.NewRound()
			for r := range rounds {
				want := fmt.Sprintf("%d-%d", g, r)
				round.SetCommand("ECHO", want)
				group.Send(round, time.Now().Add(5*time.Second))
				group.Wait(context.Background(), round, nil)
				for i := range group.Len() {
					if got := string(round.Reply(i).Str); got != want || round.Err(i) != nil {
						return fmt.Errorf("goroutine %d node %d: got %q, err %v", g, i, got, round.Err(i))
					}
				}
			}
			return nil
		})
	}
	assert.NoError(t, callers.Wait())
}

func TestNewRejectsBadInput(t *testing.T) {
	_, err := mux.New(nil, mux.Options{})
	assert.ErrorIs(t, err, mux.ErrNoNodes)
	_, err = mux.New([]string{"127.0.0.1:1", "ftp://x"}, mux.Options{})
	assert.ErrorIs(t, err, conn.ErrInvalidAddress)
}

// TestConnectAtLeastLeavesAStalledDial: ConnectAtLeast returns once the
// servers asked for are connected, while a dial that only its timeout
// would end is under way, and that dial goes on: it connects once the
// server answers, with nobody waiting for it.
func TestConnectAtLeastLeavesAStalledDial(t *testing.T) {
	servers := redistest.StartN(t, 2, redistest.Options{})
	stalled := faultnet.New(t, servers[1].Addr())
	stalled.HoldReplies()
	group, err := mux.New([]string{servers[0].Addr(), stalled.Addr(), servers[1].Addr()}, mux.Options{DialTimeout: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	assert.Equal(t, 2, group.ConnectAtLeast(ctx, 2))
	assert.NoError(t, ctx.Err(), "ConnectAtLeast waited for its context")
	assert.True(t, group.Connected(0) && group.Connected(2), "the two servers that answer are connected")
	assert.False(t, group.Connected(1), "the stalled server is connected")
	stalled.ReleaseReplies()
	assert.Eventually(t, func() bool { return group.Connected(1) }, 30*time.Second, time.Millisecond,
		"the stalled dial did not go on")
}
