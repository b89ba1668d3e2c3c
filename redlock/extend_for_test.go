package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// ExtendFor extends the hold for a TTL of its own: the nodes' keys get it,
// the validity follows it, longer or shorter than the Mutex's TTL.
func TestExtendForSetsTheHoldsTTL(t *testing.T) {
	redistest.RequireReal(t) // PTTL as redis-server counts it
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{MaxTTL: time.Minute})
	ctx := context.Background()
	m := client.NewMutex("report", MutexOptions{TTL: 2 * time.Second})
	require.NoError(t, m.Lock(ctx))
	pttls := func() []int64 {
		var out []int64
		for i := range 3 {
			out = append(out, client.do(t, i, "PTTL", "report").Int)
		}
		return out
	}

	before := time.Now()
	require.NoError(t, m.ExtendFor(ctx, time.Minute))
	for _, pttl := range pttls() {
		assert.Greater(t, pttl, int64(55_000), "the keys live a minute")
	}
	assert.True(t, m.Until().After(before.Add(55*time.Second)), "the validity follows the new TTL: %v", time.Until(m.Until()))

	require.NoError(t, m.ExtendFor(ctx, 500*time.Millisecond))
	for _, pttl := range pttls() {
		assert.LessOrEqual(t, pttl, int64(500), "a shorter TTL shortens the keys")
	}
	assert.True(t, m.Until().Before(time.Now().Add(500*time.Millisecond)), "and the validity")
	require.NoError(t, m.Unlock(ctx))
}

// A renewed hold extended for a longer TTL is renewed with it: its keys
// keep more than the Mutex's TTL.
func TestExtendForIsKeptByTheRenewal(t *testing.T) {
	redistest.RequireReal(t)
	observer := &extendObserver{extensions: make(chan ExtendEvent, 4)}
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{Observer: observer})
	ctx := context.Background()
	m := client.NewMutex("feed", MutexOptions{TTL: 600 * time.Millisecond, AutoExtend: true})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.ExtendFor(ctx, 900*time.Millisecond))
	event := <-observer.extensions // the renewal a third of 900 ms later
	require.NoError(t, event.Err)
	assert.Greater(t, event.Validity, 800*time.Millisecond, "renewed for 900 ms, not 600")
	require.NoError(t, m.Unlock(ctx))
}

// An invalid TTL is refused and leaves the hold as it was; so is one that
// a renewed hold could not renew in time.
func TestExtendForRefusesAnInvalidTTL(t *testing.T) {
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{})
	ctx := context.Background()
	m := client.NewMutex("refused", MutexOptions{TTL: 10 * time.Second, AutoExtend: true})
	require.NoError(t, m.Lock(ctx))
	until := m.Until()
	for _, ttl := range []time.Duration{0, time.Millisecond, 100 * time.Millisecond, 2 * time.Hour} {
		err := m.ExtendFor(ctx, ttl)
		require.ErrorIs(t, err, ErrInvalidOptions, "%v", ttl)
	}
	assert.Equal(t, until, m.Until())
	require.NoError(t, m.Unlock(ctx))
}
