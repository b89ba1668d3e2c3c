package mux_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// Invalidations from a scripted server: what is malformed closes the
// connection, what is well formed is reported.

// fakeTracker starts a scripted server that answers the handshake and
// CLIENT TRACKING like Redis, and PTTL with :100 followed by push.
func fakeTracker(t *testing.T, push string) *redistest.Fake {
	return redistest.NewFake(t, func(command []string) []byte {
		switch strings.ToUpper(command[0]) {
		case "HELLO":
			return []byte("%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n")
		case "INFO":
			return []byte("$20\r\n# Server\r\nrun_id:1\r\n\r\n")
		case "CLIENT":
			return []byte("+OK\r\n")
		case "PTTL":
			return []byte(":100\r\n" + push)
		}
		return []byte("-ERR unexpected command\r\n")
	})
}

// A malformed invalidation push closes the subscription connection with a
// typed error, reported with the keys it armed, and never panics; the
// connection is dialled again.
func TestMalformedInvalidationClosesTheConnection(t *testing.T) {
	tests := []struct {
		name string
		push string
	}{
		{name: "no keys", push: ">1\r\n$10\r\ninvalidate\r\n"},
		{name: "an integer for the keys", push: ">2\r\n$10\r\ninvalidate\r\n:5\r\n"},
		{name: "a string for the keys", push: ">2\r\n$10\r\ninvalidate\r\n$4\r\nlock\r\n"},
		{name: "a map for the keys", push: ">2\r\n$10\r\ninvalidate\r\n%1\r\n$4\r\nlock\r\n:1\r\n"},
		{name: "an integer key", push: ">2\r\n$10\r\ninvalidate\r\n*1\r\n:5\r\n"},
		{name: "a null key", push: ">2\r\n$10\r\ninvalidate\r\n*2\r\n$4\r\nlock\r\n_\r\n"},
		{name: "a nested key", push: ">2\r\n$10\r\ninvalidate\r\n*1\r\n*1\r\n$4\r\nlock\r\n"},
		{name: "an element too many", push: ">3\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nlock\r\n$1\r\nx\r\n"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			fake := fakeTracker(t, test.push)
			group, err := mux.New([]string{fake.Addr()}, mux.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { group.Close() })
			w := watch(t, group)
			w.connected(t, 1)

			w.track(t, 0, 4, "lock")
			lost := receive(t, w.invalidations)
			assert.Equal(t, mux.InvalidatedDisconnected, lost.Cause)
			assert.Equal(t, uint64(4), lost.Tag)
			assert.ErrorIs(t, lost.Err, mux.ErrMalformedPush)
			assert.ErrorIs(t, lost.Err, conn.ErrUnexpectedReply)
			assert.Equal(t, 0, receive(t, w.connects), "dialled again")
		})
	}
}

// The well-formed pushes of the fake are taken as Redis's.
func TestFakeInvalidationsAreReported(t *testing.T) {
	tests := []struct {
		name  string
		push  string
		cause mux.InvalidationCause
	}{
		{name: "key", push: ">2\r\n$10\r\ninvalidate\r\n*2\r\n$5\r\nother\r\n$4\r\nlock\r\n", cause: mux.InvalidatedKey},
		{name: "flush", push: ">2\r\n$10\r\ninvalidate\r\n_\r\n", cause: mux.InvalidatedFlush},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			fake := fakeTracker(t, test.push+">2\r\n$5\r\nother\r\n$1\r\nx\r\n")
			group, err := mux.New([]string{fake.Addr()}, mux.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { group.Close() })
			w := watch(t, group)
			w.connected(t, 1)

			w.track(t, 0, 5, "lock")
			assert.Equal(t, mux.Invalidation{Node: 0, Key: "lock", Tag: 5, Cause: test.cause}, receive(t, w.invalidations))
			assert.Equal(t, "other", receive(t, w.pushes), "a push of another kind goes to OnPush")
			assert.Empty(t, w.invalidations)
		})
	}
}

// Without OnInvalidate, nothing tracks.
func TestTrackNeedsOnInvalidate(t *testing.T) {
	group, _ := newGroup(t, 1)
	subscriber := group.Subscribe(mux.SubscribeOptions{})
	t.Cleanup(subscriber.Close)
	err := subscriber.Track(context.Background(), 0, mux.NewRequest("PTTL", "lock"), 1, "lock")
	assert.ErrorIs(t, err, mux.ErrTrackingUnavailable)
	assert.False(t, errors.Is(err, mux.ErrNotConnected))
}
