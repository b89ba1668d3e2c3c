package mux_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/mux"
)

// Rounds queued one after the other and flushed once each get their own
// replies, in every node.
func TestQueuedRoundsGetTheirOwnRepliesAfterOneFlush(t *testing.T) {
	group, _ := newGroup(t, 3)
	rounds := make([]*mux.Round, 200)
	for i := range rounds {
		rounds[i] = group.NewRound()
		setNX(rounds[i], "queued:"+strconv.Itoa(i%100), "token"+strconv.Itoa(i))
		group.Queue(rounds[i], time.Now().Add(5*time.Second))
	}
	group.Flush()
	for i, round := range rounds {
		require.NoError(t, group.Wait(context.Background(), round, nil))
		for node := range group.Len() {
			require.NoError(t, round.Err(node))
			if i < 100 {
				assert.True(t, round.Reply(node).IsOK(), "round %d, node %d: %s", i, node, round.Reply(node))
			} else {
				assert.True(t, round.Reply(node).Null, "round %d, node %d: the key was set by round %d", i, node, i-100)
			}
		}
	}
}
