package redlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// More holds come due at once than one batch carries: every one is
// renewed, in batches, and the renewer keeps rounds for one batch, not one
// per hold.
func TestRenewerServesMoreHoldsThanABatchOnItsOwnRounds(t *testing.T) {
	const holds = maxRenewalBatch + 88
	clock := newManualClock() // every renewal comes due at one reading
	renewed := make(chan struct{}, holds)
	observer := &countingObserver{onExtend: func(event ExtendEvent) {
		if event.Automatic && event.Err == nil {
			renewed <- struct{}{}
		}
	}}
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{clock: clock, Observer: observer, MaxTTL: 30 * time.Second})
	ttl := 30 * time.Second
	mutexes := make([]*Mutex, holds)
	for i := range mutexes {
		mutexes[i] = client.NewMutex("batch:"+strconv.Itoa(i), MutexOptions{TTL: ttl, AutoExtend: true})
		require.NoError(t, mutexes[i].Lock(context.Background()))
	}
	until := mutexes[0].Until()

	clock.Advance(ttl / 3)
	client.renewer.Wake() // the renewer's timer runs in real time
	deadline := time.After(time.Minute)
	for range holds {
		select {
		case <-renewed:
		case <-deadline:
			automatic, failed, lost := observer.counts()
			t.Fatalf("%d renewals (%d failed, %d lost) of %d holds within a minute", automatic, failed, lost, holds)
		}
	}
	for i, m := range mutexes {
		assert.True(t, m.Until().After(until), "hold %d was not renewed", i)
		require.NoError(t, m.Unlock(context.Background()))
	}
	require.NoError(t, client.Close()) // the renewer's goroutine has ended
	assert.Len(t, client.renewer.extenders, maxRenewalBatch, "the renewer's rounds")
}

// Holds taken one after the other come due one after the other: a renewal
// due within a tenth of the renewals' interval goes with the batch of the
// one due first.
func TestARenewalDueSoonGoesWithTheBatchDueFirst(t *testing.T) {
	clock := newManualClock()
	renewed := make(chan string, 2)
	observer := &countingObserver{onExtend: func(event ExtendEvent) {
		if event.Automatic && event.Err == nil {
			renewed <- event.Key
		}
	}}
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{clock: clock, Observer: observer, MaxTTL: 30 * time.Second})
	ttl := 30 * time.Second
	first := client.NewMutex("first", MutexOptions{TTL: ttl, AutoExtend: true})
	second := client.NewMutex("second", MutexOptions{TTL: ttl, AutoExtend: true})
	require.NoError(t, first.Lock(context.Background()))
	clock.Advance(renewalEarly(ttl) / 2)
	require.NoError(t, second.Lock(context.Background()))
	until := second.Until()

	clock.Advance(ttl/3 - renewalEarly(ttl)/2) // the first is due; the second soon
	client.renewer.Wake()                      // the renewer's timer runs in real time
	keys := map[string]bool{}
	for range 2 {
		select {
		case key := <-renewed:
			keys[key] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("renewed: %v; the second hold's renewal did not go with the first's", keys)
		}
	}
	assert.Equal(t, map[string]bool{"first": true, "second": true}, keys)
	assert.True(t, second.Until().After(until), "the second hold was renewed")
}
