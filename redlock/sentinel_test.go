package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// A member that Redis Sentinel serves is followed through a failover, and
// the promoted replica is quarantined: its votes do not count for MaxTTL,
// since it may lack the last lock keys, while the holds and the new locks
// go on with the other members. The list mixes a Sentinel member with
// plain ones.
func TestSentinelMemberFailoverIsQuarantined(t *testing.T) {
	group := redistest.StartSentinelGroup(t, "locks", 3, redistest.Options{})
	plain := startCluster(t, 2, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := New(append([]string{group.Address()}, plain.addresses...), Options{NodeTimeout: time.Second, Quarantine: QuarantineOff})
	require.NoError(t, err)
	defer client.Close()
	require.Equal(t, QuarantineOn, client.options.Quarantine, "on for a Sentinel member, whatever the options")
	require.NoError(t, client.TrustNodes(ctx), "the servers the test started are new")

	held := client.NewMutex("held", MutexOptions{TTL: 5 * time.Second})
	require.NoError(t, held.Lock(ctx))
	assert.Equal(t, held.Token(), group.Master().Do(t, "GET", "held"), "the Sentinel member voted")

	group.Failover()
	// The client moves to the new master at the sentinels' announcement,
	// or at the old one's first READONLY; its marker, the old master's
	// replicated, then puts it in quarantine.
	for attempt := 0; client.Stats().Quarantined == 0; attempt++ {
		require.NoError(t, ctx.Err(), "the promoted replica was never quarantined")
		m := client.NewMutex("probe", MutexOptions{TTL: 5 * time.Second})
		require.NoError(t, m.TryLock(ctx), "two plain members of three are a quorum")
		require.NoError(t, m.Unlock(ctx))
	}
	require.NoError(t, held.Extend(ctx), "the hold goes on with the plain members")
	select {
	case <-held.Done():
		t.Fatal("the hold ended at the failover")
	default:
	}

	// With a plain member down, the quarantined member's outcome says why.
	plain.servers[1].Shutdown()
	err = client.NewMutex("refused", MutexOptions{TTL: 5 * time.Second}).TryLock(ctx)
	require.ErrorIs(t, err, ErrNotAcquired)
	var failure *QuorumError
	require.True(t, errors.As(err, &failure))
	assert.Equal(t, OutcomeQuarantined, failure.Nodes[0].Outcome, "%v", err)
	assert.ErrorIs(t, failure.Nodes[0].Err, ErrQuarantined)
	assert.Regexp(t, `quarantined for [0-9.]+m?s more: it restarted, was promoted or was flushed [0-9.]+m?s ago and may have lost lock keys`, failure.Nodes[0].Err.Error())
}
