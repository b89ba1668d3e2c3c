package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// lossHoldingObserver holds up the report of one key's loss until another
// hold's Done closes.
type lossHoldingObserver struct {
	NopObserver
	key   string
	until <-chan struct{}
}

func (o *lossHoldingObserver) OnLost(event LostEvent) {
	if event.Key == o.key {
		<-o.until
	}
}

// The ends of the holds are watched together, but each is signalled on
// its own: an observer slow to take one loss delays no other hold's end.
func TestAHoldsEndWaitsForNoOtherHoldsObserver(t *testing.T) {
	clock := newManualClock() // both holds end at one reading
	observer := &lossHoldingObserver{key: "first"}
	client := startCluster(t, 1, redistest.Options{}).client(t, Options{clock: clock, Observer: observer})
	ttl := time.Second
	first := client.NewMutex("first", MutexOptions{TTL: ttl})
	second := client.NewMutex("second", MutexOptions{TTL: ttl})
	require.NoError(t, first.Lock(context.Background()))
	require.NoError(t, second.Lock(context.Background()))
	observer.until = second.Done()

	clock.Advance(2 * ttl) // the ends are looked at a TTL from now, in real time
	for _, m := range []*Mutex{second, first} {
		select {
		case <-m.Done():
		case <-time.After(time.Minute):
			t.Fatalf("the end of %q was not signalled", m.Key())
		}
	}
}
