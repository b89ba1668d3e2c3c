package mux_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// dialledGroup starts three servers and returns a Group over them, the
// first and the third behind proxies whose replies are held, so that their
// dials wait in the handshake until the test releases them. Nothing is
// dialled yet.
func dialledGroup(t *testing.T) (*mux.Group, []*redistest.Server, []*faultnet.Proxy) {
	t.Helper()
	servers := redistest.StartN(t, 3, redistest.Options{})
	proxies := []*faultnet.Proxy{faultnet.New(t, servers[0].Addr()), nil, faultnet.New(t, servers[2].Addr())}
	proxies[0].HoldReplies()
	proxies[2].HoldReplies()
	group, err := mux.New([]string{proxies[0].Addr(), servers[1].Addr(), proxies[2].Addr()}, mux.Options{DialTimeout: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { group.Close() })
	t.Cleanup(func() {
		// A dial blocked in its handshake would hold Close up.
		proxies[0].ReleaseReplies()
		proxies[2].ReleaseReplies()
	})
	return group, servers, proxies
}

// onCount is a quorum of two OKs that runs a function after counting a
// node.
type onCount struct {
	quorumTally
	after func(node int)
}

func (o *onCount) Count(node int, round *mux.Round) bool {
	decided := o.quorumTally.Count(node, round)
	o.after(node)
	return decided
}

// A server whose dial completes while Wait gathers the others is taken
// before a server still being dialled: the round is decided by the quick
// servers, and the slow one's call is abandoned, not waited for until its
// deadline.
func TestQuickServersDecideWhileAServerIsDialled(t *testing.T) {
	group, _, proxies := dialledGroup(t)
	ctx := context.Background()
	require.NoError(t, group.Do(ctx, 1, mux.NewRequest("PING"))) // the second server is connected
	require.False(t, group.Connected(0))
	round := group.NewRound()
	setNX(round, "k", "a")
	group.Send(round, time.Now().Add(2*time.Second))
	tally := &onCount{quorumTally: quorumTally{need: 2}, after: func(node int) {
		if node == 1 {
			// The first server's dial completes after Wait passed it by.
			proxies[0].ReleaseReplies()
			require.Eventually(t, func() bool { return group.Connected(0) }, 5*time.Second, time.Millisecond)
		}
	}}
	require.NoError(t, group.Wait(ctx, round, tally))
	assert.Equal(t, 2, tally.got)
	assert.True(t, round.Abandoned(2), "the round waited for the server still being dialled: %v", round.Err(2))
}

// A delivered command (Round.Deliver) that Wait stops waiting for while
// its server is still being dialled reaches the server once the dial
// completes, before the commands sent after it; a command not delivered
// is dropped.
func TestDeliveredCommandReachesAServerStillBeingDialled(t *testing.T) {
	tests := []struct {
		name    string
		deliver bool
		want    string // the value on the third server after the APPEND
	}{
		{name: "delivered: the SET runs before the APPEND sent after it", deliver: true, want: "ab"},
		{name: "not delivered: never sent", deliver: false, want: "b"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			group, servers, proxies := dialledGroup(t)
			ctx := context.Background()
			proxies[0].ReleaseReplies()
			round := group.NewRound()
			setNX(round, "k", "a")
			if test.deliver {
				round.Deliver()
			}
			group.Send(round, time.Now().Add(5*time.Second))
			require.NoError(t, group.Wait(ctx, round, &quorumTally{need: 2}))
			require.True(t, round.Abandoned(2))

			// The round's calls are reused at once; what follows on the
			// third server's connection goes after the delivered command.
			round.SetCommand("APPEND", "k", "b")
			round.Skip(0)
			round.Skip(1)
			group.Send(round, time.Now().Add(5*time.Second))
			proxies[2].ReleaseReplies()
			require.NoError(t, group.Wait(ctx, round, nil))
			require.NoError(t, round.Err(2))
			assert.Equal(t, test.want, servers[2].Do(t, "GET", "k"))
		})
	}
}
