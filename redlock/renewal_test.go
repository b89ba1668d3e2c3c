package redlock

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// countingObserver counts automatic extensions and losses.
type countingObserver struct {
	NopObserver
	mu        sync.Mutex
	automatic int
	failed    int
	lost      []error
	onExtend  func(ExtendEvent)
}

func (o *countingObserver) OnExtend(event ExtendEvent) {
	o.mu.Lock()
	if event.Automatic {
		o.automatic++
		if event.Err != nil {
			o.failed++
		}
	}
	onExtend := o.onExtend
	o.mu.Unlock()
	if onExtend != nil {
		onExtend(event)
	}
}

func (o *countingObserver) OnLost(event LostEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lost = append(o.lost, event.Err)
}

func (o *countingObserver) counts() (automatic, failed, lost int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.automatic, o.failed, len(o.lost)
}

// A hold of 5 s with a 1 s TTL survives through its renewal.
func TestRenewalKeepsALongHold(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	observer := &countingObserver{}
	client := nodes.client(t, Options{Observer: observer})
	err := client.Do(context.Background(), "long", MutexOptions{TTL: time.Second}, func(ctx context.Context) error {
		select {
		case <-time.After(5 * time.Second): // the work
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	require.NoError(t, err)
	automatic, failed, lost := observer.counts()
	assert.GreaterOrEqual(t, automatic, 10, "about one extension per third of the TTL")
	assert.Zero(t, failed)
	assert.Zero(t, lost)
	assert.Equal(t, repeat("", 3), client.values(t, "long"), "Do unlocked")
}

// With 3 of 5 nodes stopped the renewal cannot reach a quorum: the hold is
// declared lost before its validity ends, so that its holder can stop in
// time.
func TestRenewalSignalsLossBeforeTheValidityEnds(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 5, redistest.Options{})
	observer := &countingObserver{}
	client := nodes.client(t, Options{Observer: observer, NodeTimeout: 20 * time.Millisecond})
	m := client.NewMutex("k", MutexOptions{TTL: time.Second, AutoExtend: true})
	require.NoError(t, m.Lock(context.Background()))
	for _, server := range nodes.servers[:3] {
		server.Stop()
	}
	defer func() {
		for _, server := range nodes.servers[:3] {
			server.Cont()
		}
	}()

	<-m.Done()
	until := m.Until()
	assert.True(t, time.Now().Before(until), "lost %v before the validity ended", time.Until(until))
	// Done closes first, so that the holder stops at once; the observer
	// is told right after.
	require.True(t, waitUntil(func() bool { _, _, lost := observer.counts(); return lost > 0 }), "the observer is told")
	_, failed, lost := observer.counts()
	assert.Positive(t, failed)
	assert.Equal(t, 1, lost)
	assert.ErrorIs(t, m.Unlock(context.Background()), ErrLockLost)
}

// The context of Client.Do is cancelled with cause ErrLockLost when the
// hold is lost.
func TestDoCancelsItsContextWhenTheHoldIsLost(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{})
	err := client.Do(context.Background(), "k", MutexOptions{TTL: 300 * time.Millisecond}, func(ctx context.Context) error {
		for i := range nodes.servers {
			client.do(t, i, "SET", "k", "thief") // the keys are taken over
		}
		<-ctx.Done()
		return context.Cause(ctx)
	})
	require.ErrorIs(t, err, ErrLockLost)
}

// D13 (Redisson #7272): an Unlock that comes while an automatic extension
// is in flight stops the renewal: nothing is scheduled for the hold again.
func TestD13UnlockDuringAnExtensionStopsTheRenewal(t *testing.T) {
	redistest.RequireReal(t) // the goroutine count must not include an in-process server's
	nodes := startCluster(t, 3, redistest.Options{})
	goroutines := runtime.NumGoroutine()
	observer := &countingObserver{}
	client, err := New(nodes.addresses, Options{Observer: observer})
	require.NoError(t, err)
	m := client.NewMutex("k", MutexOptions{TTL: 250 * time.Millisecond, AutoExtend: true})
	unlocked := make(chan error, 1)
	observer.onExtend = func(event ExtendEvent) {
		if event.Automatic {
			observer.onExtend = nil
			// On the renewer's goroutine, between the extension's replies
			// and its rescheduling.
			unlocked <- m.Unlock(context.Background())
		}
	}
	require.NoError(t, m.Lock(context.Background()))
	require.NoError(t, <-unlocked)
	require.NoError(t, client.Close()) // waits for the renewer to finish

	for _, event := range client.renewer.Queued() {
		assert.NotEqual(t, m, (*Mutex)(event.Lock), "a renewal of the unlocked hold was scheduled")
	}
	automatic, _, lost := observer.counts()
	assert.Equal(t, 1, automatic)
	assert.Zero(t, lost)
	assertGoroutinesBackTo(t, goroutines)
}

// MaxHold bounds a renewed hold: the renewal stops and the hold ends.
func TestRenewalStopsAtMaxHold(t *testing.T) {
	nodes := startCluster(t, 1, redistest.Options{})
	client := nodes.client(t, Options{NodeTimeout: 20 * time.Millisecond})
	m := client.NewMutex("k", MutexOptions{TTL: 100 * time.Millisecond, MaxHold: 300 * time.Millisecond, AutoExtend: true})
	start := time.Now()
	require.NoError(t, m.Lock(context.Background()))
	<-m.Done()
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "renewed beyond one TTL")
	assert.False(t, m.Until().After(start.Add(300*time.Millisecond+10*time.Millisecond)), "never beyond MaxHold")
	assertUnlockAfterTheEnd(t, m)
}

// assertUnlockAfterTheEnd unlocks a hold whose Done has closed: a release
// that starts within the validity is confirmed, and one that starts after
// it reports the hold lost.
func assertUnlockAfterTheEnd(t *testing.T, m *Mutex) {
	t.Helper()
	until := m.Until()
	started := time.Now()
	err := m.Unlock(context.Background())
	if started.Before(until.Add(-5 * time.Millisecond)) {
		assert.NoError(t, err, "released %v before the validity ended", until.Sub(started))
	} else if started.After(until) {
		assert.ErrorIs(t, err, ErrLockLost, "released %v after the validity ended", started.Sub(until))
	}
}

// A renewed hold that reaches MaxHold ends before its validity does, with
// the margin a lost hold gets, however the last extension was cut short:
// its holder must be told while the hold is still exclusive.
func TestMaxHoldEndsBeforeTheValidity(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{NodeTimeout: 20 * time.Millisecond})
	m := client.NewMutex("k", MutexOptions{TTL: 300 * time.Millisecond, MaxHold: 350 * time.Millisecond, AutoExtend: true})
	start := time.Now()
	require.NoError(t, m.Lock(context.Background()))
	<-m.Done()
	ended, until := time.Now(), m.Until()
	assert.True(t, until.After(start.Add(300*time.Millisecond)), "renewed beyond one TTL")
	assert.True(t, ended.Before(until), "Done closed %v after the validity ended", ended.Sub(until))
	assertUnlockAfterTheEnd(t, m)
}

// Client.Close ends every hold it was keeping track of: nothing renews
// them any more, so their Done channels close, and so does one asked for
// after Close.
func TestCloseEndsTheHolds(t *testing.T) {
	nodes := startCluster(t, 1, redistest.Options{})
	client, err := New(nodes.addresses, Options{})
	require.NoError(t, err)
	renewed := client.NewMutex("renewed", MutexOptions{AutoExtend: true})
	watched := client.NewMutex("watched", MutexOptions{})
	unwatched := client.NewMutex("unwatched", MutexOptions{})
	for _, m := range []*Mutex{renewed, watched, unwatched} {
		require.NoError(t, m.Lock(context.Background()))
	}
	dones := []<-chan struct{}{renewed.Done(), watched.Done()}

	require.NoError(t, client.Close())
	dones = append(dones, unwatched.Done())
	for i, done := range dones {
		select {
		case <-done:
		default:
			t.Errorf("Done %d of %d still open after Close", i+1, len(dones))
		}
	}
}

// unlockingObserver unlocks a hold as soon as it is reported lost, as a
// service that cleans up on loss would.
type unlockingObserver struct {
	NopObserver
	mutexes  map[string]*Mutex
	unlocked chan error
}

func (o *unlockingObserver) OnLost(event LostEvent) {
	o.unlocked <- o.mutexes[event.Key].Unlock(context.Background())
}

// An observer may unlock the hold it is told was lost, whatever ended it:
// the end of MaxHold, or Client.Close.
func TestObserverUnlocksALostHold(t *testing.T) {
	nodes := startCluster(t, 1, redistest.Options{})
	observer := &unlockingObserver{mutexes: map[string]*Mutex{}, unlocked: make(chan error, 2)}
	// A node timeout of 200 ms: the hold ends 400 ms before its validity,
	// and the observer's release comes well within it.
	client, err := New(nodes.addresses, Options{Observer: observer, NodeTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	bounded := client.NewMutex("bounded", MutexOptions{TTL: time.Second, MaxHold: 1200 * time.Millisecond, AutoExtend: true})
	renewed := client.NewMutex("renewed", MutexOptions{AutoExtend: true})
	observer.mutexes["bounded"], observer.mutexes["renewed"] = bounded, renewed
	require.NoError(t, bounded.Lock(context.Background()))
	require.NoError(t, renewed.Lock(context.Background()))

	wait := func(what string) error {
		select {
		case err := <-observer.unlocked:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the observer's Unlock never returned", what)
			return nil
		}
	}
	assert.NoError(t, wait("MaxHold"), "the release of a hold ended by MaxHold within its validity")
	closed := make(chan error, 1)
	go func() { closed <- client.Close() }()
	assert.ErrorIs(t, wait("Close"), ErrClosed, "Unlock after Close")
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close never returned")
	}
}
