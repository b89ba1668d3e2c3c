package fencedstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/fencedstore"
)

// newStore returns a Store over address, closed when the test ends.
func newStore(t *testing.T, address string) *fencedstore.Store {
	t.Helper()
	store, err := fencedstore.New(address, redlock.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return store
}

func TestStoreRefusesOlderFences(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	store := newStore(t, server.Addr())
	ctx := context.Background()
	tests := []struct {
		name        string
		fence       int64
		wantApplied bool
		wantNewest  int64
	}{
		{name: "first write", fence: 5, wantApplied: true, wantNewest: 5},
		{name: "same holder again", fence: 5, wantApplied: true, wantNewest: 5},
		{name: "newer holder", fence: 9, wantApplied: true, wantNewest: 9},
		{name: "stale holder", fence: 6, wantApplied: false, wantNewest: 9},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			applied, newest, err := store.Set(ctx, "balance", []byte(test.name), test.fence)
			require.NoError(t, err)
			assert.Equal(t, test.wantApplied, applied)
			assert.Equal(t, test.wantNewest, newest)
		})
	}
	assert.Equal(t, "newer holder", server.Do(t, "GET", "balance"))
	assert.Equal(t, "9", server.Do(t, "GET", "balance:fence"), "the newest fence, beside the key")
}

func TestNewRefusesInvalidOptions(t *testing.T) {
	tests := []struct {
		name    string
		address string
		options redlock.Options
	}{
		{name: "an address that does not parse", address: "redis://[::1"},
		{name: "negative dial timeout", address: "127.0.0.1:6379", options: redlock.Options{DialTimeout: -time.Second}},
		{name: "a space in the client name", address: "127.0.0.1:6379", options: redlock.Options{ClientName: "my store"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fencedstore.New(tt.address, tt.options)
			assert.ErrorIs(t, err, redlock.ErrInvalidOptions)
		})
	}
}

// A cancellation ends Set at once, with an error that matches
// context.Canceled, even when the node would make the caller wait for the
// request timeout.
func TestCancellationEndsSetPromptly(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	store := newStore(t, server.Addr())
	_, _, err := store.Set(context.Background(), "store", []byte("v"), 1) // the connection is up
	require.NoError(t, err)
	server.Stop()
	defer server.Cont()

	cancelled, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(20*time.Millisecond, cancel)
	defer timer.Stop()
	started := time.Now()
	_, _, err = store.Set(cancelled, "store", []byte("v"), 2)
	elapsed := time.Since(started)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, elapsed, time.Second, "a cancelled call must not wait for the 5 s request timeout")
}

// The storage side compares fences exactly too: a Lua number cannot tell
// 2^53 from 2^53+1, and the Store let the older of them overwrite the
// newer.
func TestStoreComparesFencesExactly(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	store := newStore(t, server.Addr())
	ctx := context.Background()
	tests := []struct {
		name        string
		fence       int64
		wantApplied bool
		wantNewest  int64
	}{
		{name: "2^53+1", fence: 9007199254740993, wantApplied: true, wantNewest: 9007199254740993},
		{name: "2^53, older", fence: 9007199254740992, wantApplied: false, wantNewest: 9007199254740993},
		{name: "largest int64", fence: 9223372036854775807, wantApplied: true, wantNewest: 9223372036854775807},
		{name: "one below, older", fence: 9223372036854775806, wantApplied: false, wantNewest: 9223372036854775807},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			applied, newest, err := store.Set(ctx, "balance", []byte(test.name), test.fence)
			require.NoError(t, err)
			assert.Equal(t, test.wantApplied, applied)
			assert.Equal(t, test.wantNewest, newest)
		})
	}
	assert.Equal(t, "largest int64", server.Do(t, "GET", "balance"))
	assert.Equal(t, "9223372036854775807", server.Do(t, "GET", "balance:fence"))
}

// The Store refuses a negative fence, and a newest fence that is not a
// decimal integer, with an error instead of a comparison with nil.
func TestStoreRefusesFencesThatAreNotIntegers(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	store := newStore(t, server.Addr())
	ctx := context.Background()
	_, _, err := store.Set(ctx, "balance", []byte("x"), -1)
	assert.ErrorContains(t, err, "negative fence")

	server.Do(t, "SET", "balance:fence", "12abc")
	_, _, err = store.Set(ctx, "balance", []byte("x"), 20)
	assert.ErrorIs(t, err, redlock.ErrFenceCounter)
	assert.Equal(t, "(nil)", server.Do(t, "GET", "balance"), "nothing written")
}
