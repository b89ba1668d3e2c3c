package mux_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// TrackAll arms each key with its own tag, gives each read its own reply,
// and a change from outside is reported with the tag of its key's arming.
func TestTrackAllArmsEachKeyWithItsTag(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 1)
	w := watch(t, group)
	w.connected(t, 1)
	armings := make([]mux.Arming, 50)
	for i := range armings {
		key := "lock:" + strconv.Itoa(i)
		outside(t, servers[0], "SET", key, "token", "PX", strconv.Itoa(60000+i))
		armings[i] = mux.Arming{Request: mux.NewRequest("PTTL", key), Tag: uint64(100 + i), Keys: []string{key}}
	}
	w.subscriber.TrackAll(context.Background(), 0, armings)
	for i, arming := range armings {
		require.NoError(t, arming.Err, "arming %d", i)
		assert.Greater(t, arming.Request.Reply().Int, int64(59000+i-1000), "arming %d read its own key", i)
	}

	outside(t, servers[0], "PEXPIRE", "lock:7", "100")
	outside(t, servers[0], "DEL", "lock:42")
	assert.Equal(t, mux.Invalidation{Node: 0, Key: "lock:7", Tag: 107, Cause: mux.InvalidatedKey}, receive(t, w.invalidations))
	assert.Equal(t, mux.Invalidation{Node: 0, Key: "lock:42", Tag: 142, Cause: mux.InvalidatedKey}, receive(t, w.invalidations))
}

// A TrackAll while disconnected fails each arming at once.
func TestTrackAllFailsEachArmingWhileDisconnected(t *testing.T) {
	redistest.RequireReal(t)
	group, servers := newGroup(t, 1)
	w := watch(t, group)
	w.connected(t, 1)
	w.track(t, 0, 1, "lock")
	servers[0].Kill9()
	assert.Equal(t, mux.InvalidatedDisconnected, receive(t, w.invalidations).Cause)

	armings := []mux.Arming{{Request: mux.NewRequest("PTTL", "a"), Tag: 2, Keys: []string{"a"}},
		{Request: mux.NewRequest("PTTL", "b"), Tag: 3, Keys: []string{"b"}}}
	w.subscriber.TrackAll(context.Background(), 0, armings)
	for _, arming := range armings {
		assert.ErrorIs(t, arming.Err, mux.ErrNotConnected)
	}
}
