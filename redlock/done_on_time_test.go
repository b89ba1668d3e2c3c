package redlock

// Done keeps its promise: it closes before the hold's validity ends
// (issue 13, items 1 to 4).

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// assertDoneBeforeUntil waits, at most bound, for the hold of m to end and
// fails the test unless Done closed before Until passed. Until is read
// again whenever it passes: an extension may have moved it.
func assertDoneBeforeUntil(t *testing.T, m *Mutex, bound time.Duration) {
	t.Helper()
	done := m.Done()
	giveUp := time.NewTimer(bound)
	defer giveUp.Stop()
	for {
		until := m.Until()
		untilPassed := time.NewTimer(time.Until(until))
		select {
		case <-done:
			untilPassed.Stop()
			closed := time.Now()
			assert.True(t, closed.Before(until), "Done closed %v after Until", closed.Sub(until))
			return
		case <-giveUp.C:
			untilPassed.Stop()
			t.Errorf("Done still open after %v, %v before Until", bound, time.Until(until))
			return
		case <-untilPassed.C:
		}
		if m.Until().After(until) {
			continue // extended
		}
		select {
		case <-done:
			t.Errorf("Done closed %v after Until", time.Since(until))
		case <-giveUp.C:
			t.Errorf("Done still open %v after Until", time.Since(until))
		}
		return
	}
}

// Item 1: a hold resumed with AutoExtend whose validity left is shorter
// than a third of its TTL ends before its validity when it cannot be
// renewed: its end does not wait for a first renewal due a third of the
// TTL after the resumption.
func TestResumedHoldDoneClosesBeforeUntil(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	first := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: 500 * time.Millisecond})
	require.NoError(t, first.Lock(context.Background()))

	client := nodes.client(t, Options{NodeTimeout: 20 * time.Millisecond})
	resumed := client.NewMutex("k", MutexOptions{TTL: 3 * time.Second, Token: first.Token(), AutoExtend: true})
	require.NoError(t, resumed.Lock(context.Background()))
	require.Less(t, time.Until(resumed.Until()), time.Second, "resumed with less validity than TTL/3")
	for _, server := range nodes.servers[1:] {
		server.Stop() // no quorum can renew it
	}
	defer func() {
		for _, server := range nodes.servers[1:] {
			server.Cont()
		}
	}()
	assertDoneBeforeUntil(t, resumed, 5*time.Second)
}

// Item 1: the first renewal of a resumed hold comes within the validity it
// was resumed with, not a third of the TTL later: the hold outlives the
// validity it was resumed with.
func TestResumedHoldIsRenewedBeforeItsValidityEnds(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	first := nodes.client(t, Options{}).NewMutex("k", MutexOptions{TTL: 500 * time.Millisecond})
	require.NoError(t, first.Lock(context.Background()))

	client := nodes.client(t, Options{NodeTimeout: 20 * time.Millisecond})
	resumed := client.NewMutex("k", MutexOptions{TTL: 3 * time.Second, Token: first.Token(), AutoExtend: true})
	require.NoError(t, resumed.Lock(context.Background()))
	resumedUntil := resumed.Until()
	require.Less(t, time.Until(resumedUntil), time.Second, "resumed with less validity than TTL/3")

	select {
	case <-resumed.Done():
		t.Fatalf("the resumed hold ended %v before its validity", time.Until(resumedUntil))
	case <-time.After(time.Until(resumedUntil) + 100*time.Millisecond):
	}
	assert.True(t, resumed.Until().After(resumedUntil),
		"not renewed within the validity it was resumed with: Until %v ago", time.Since(resumed.Until()))
	resumed.Unlock(context.Background()) // not what this test asserts: 20 ms node timeouts can pass on a loaded machine
}

// Item 2: the drift allowance of a resumed hold is computed from the
// remaining TTL it relies on, not from the resumer's TTL option: a 60 s
// hold resumed by a Mutex with a 1 s TTL is not valid longer than the
// acquirer's.
func TestResumedHoldValidityFollowsTheRemainingTTL(t *testing.T) {
	clock := newManualClock() // both holds start at the same reading
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{clock: clock, MaxTTL: time.Minute})
	first := client.NewMutex("k", MutexOptions{TTL: time.Minute})
	require.NoError(t, first.Lock(context.Background()))

	resumed := client.NewMutex("k", MutexOptions{TTL: time.Second, Token: first.Token()})
	require.NoError(t, resumed.Lock(context.Background()))
	assert.False(t, resumed.Until().After(first.Until()),
		"the resumed hold's Until is %v later than the acquirer's", resumed.Until().Sub(first.Until()))
	assert.True(t, resumed.Until().After(first.Until().Add(-50*time.Millisecond)),
		"the resumed hold's Until is %v earlier than the acquirer's", first.Until().Sub(resumed.Until()))
	require.NoError(t, resumed.Unlock(context.Background()))
}

// Item 3: TTL 60 ms, one node refusing the extension and one silent. A
// node timeout that is not small against the TTL is refused; with one
// that is, Done closes before Until.
func TestDoneClosesBeforeUntilWithARefusingAndASilentNode(t *testing.T) {
	redistest.RequireReal(t)
	tests := []struct {
		name        string
		nodeTimeout time.Duration
		refused     bool // the options are refused: the node timeout is not small against the TTL
	}{
		{name: "default node timeout", refused: true},
		{name: "node timeout of a fifth of the TTL", nodeTimeout: 12 * time.Millisecond},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			nodes := startCluster(t, 3, redistest.Options{})
			client := nodes.client(t, Options{NodeTimeout: test.nodeTimeout})
			m := client.NewMutex("k", MutexOptions{TTL: 60 * time.Millisecond, AutoExtend: true})
			err := m.Lock(context.Background())
			if errors.Is(err, ErrInvalidOptions) {
				assert.True(t, test.refused, "refused: %v", err)
				return
			}
			require.NoError(t, err)
			client.do(t, 0, "SET", "k", "thief") // node 1 refuses the extension
			nodes.servers[1].Stop()              // node 2 is silent
			defer nodes.servers[1].Cont()
			assertDoneBeforeUntil(t, m, 5*time.Second)
		})
	}
}

// blockingObserver blocks the first automatic extension of key until
// release is closed, as a slow observer (a log sink, a metrics push) would.
type blockingObserver struct {
	NopObserver
	key     string
	once    sync.Once
	blocked chan struct{} // closed when the extension is blocked
	release chan struct{}
}

func (o *blockingObserver) OnExtend(event ExtendEvent) {
	if event.Automatic && event.Key == o.key {
		o.once.Do(func() {
			close(o.blocked)
			<-o.release
		})
	}
}

// Item 3: every hold's end is watched by a timer of its own, whatever the
// renewal is doing: while the renewal goroutine is stuck in an observer,
// a hold it cannot renew still ends before its validity.
func TestDoneClosesBeforeUntilWhateverTheRenewalDoes(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	observer := &blockingObserver{key: "stuck", blocked: make(chan struct{}), release: make(chan struct{})}
	client := nodes.client(t, Options{Observer: observer, NodeTimeout: 20 * time.Millisecond})
	stuck := client.NewMutex("stuck", MutexOptions{TTL: 100 * time.Millisecond, AutoExtend: true})
	watched := client.NewMutex("watched", MutexOptions{TTL: 300 * time.Millisecond, AutoExtend: true})
	require.NoError(t, stuck.Lock(context.Background()))
	require.NoError(t, watched.Lock(context.Background()))
	select {
	case <-observer.blocked:
	case <-time.After(5 * time.Second):
		close(observer.release)
		t.Fatal("the renewal of the first hold never reached the observer")
	}
	assertDoneBeforeUntil(t, watched, time.Second)
	close(observer.release)
}

// The timer of a hold's end follows an extension that shortens the hold:
// a 60 s hold resumed by a Mutex with a 1 s TTL lasts a second after its
// first renewal, and ends before that, while the renewal is stuck in an
// observer.
func TestDoneClosesBeforeUntilWhenAnExtensionShortensTheHold(t *testing.T) {
	nodes := startCluster(t, 3, redistest.Options{})
	first := nodes.client(t, Options{MaxTTL: time.Minute}).NewMutex("k", MutexOptions{TTL: time.Minute})
	require.NoError(t, first.Lock(context.Background()))

	observer := &blockingObserver{key: "k", blocked: make(chan struct{}), release: make(chan struct{})}
	client := nodes.client(t, Options{Observer: observer, NodeTimeout: 20 * time.Millisecond})
	resumed := client.NewMutex("k", MutexOptions{TTL: time.Second, Token: first.Token(), AutoExtend: true})
	require.NoError(t, resumed.Lock(context.Background()))
	defer close(observer.release)
	select {
	case <-observer.blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("the renewal never reached the observer")
	}
	require.Less(t, time.Until(resumed.Until()), 2*time.Second, "the extension shortened the hold")
	assertDoneBeforeUntil(t, resumed, 5*time.Second)
}

// An extension that would shorten the hold and fails may still have been
// applied by the nodes that did not answer in time: the validity becomes
// the extension's, never staying the longer one.
func TestValidityFollowsAShorteningExtensionThatFailed(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	first := nodes.client(t, Options{MaxTTL: time.Minute}).NewMutex("k", MutexOptions{TTL: time.Minute})
	require.NoError(t, first.Lock(context.Background()))
	client := nodes.client(t, Options{NodeTimeout: 20 * time.Millisecond})
	resumed := client.NewMutex("k", MutexOptions{TTL: time.Second, Token: first.Token()})
	require.NoError(t, resumed.Lock(context.Background()))
	require.Greater(t, time.Until(resumed.Until()), 50*time.Second)

	for _, server := range nodes.servers[1:] {
		server.Stop() // they get the extension and apply it late
	}
	start := time.Now()
	err := resumed.Extend(context.Background())
	for _, server := range nodes.servers[1:] {
		server.Cont()
	}
	require.ErrorIs(t, err, ErrLockLost)
	assert.False(t, resumed.Until().After(start.Add(time.Second)),
		"Until %v after the extension's start, beyond its TTL", resumed.Until().Sub(start))
	assert.LessOrEqual(t, client.do(t, 1, "PTTL", "k").Int, int64(1000), "the late nodes applied it")
}

// Item 3: Options.NodeTimeout must be small against the TTL of a renewed
// hold: at most a fifth of it. Larger, the options are refused; a hold
// that is not renewed ends with its validity and may wait longer.
func TestNodeTimeoutNotSmallAgainstTheTTLIsRefused(t *testing.T) {
	tests := []struct {
		name        string
		nodeTimeout time.Duration
		options     MutexOptions
		err         string // empty when accepted
	}{
		{name: "default node timeout, TTL 60 ms", options: MutexOptions{TTL: 60 * time.Millisecond, AutoExtend: true},
			err: "MutexOptions.TTL 60ms of a renewed hold is shorter than five node timeouts (Options.NodeTimeout 50ms)"},
		{name: "default node timeout, TTL 249 ms", options: MutexOptions{TTL: 249 * time.Millisecond, AutoExtend: true}, err: "five node timeouts"},
		{name: "default node timeout, TTL 250 ms", options: MutexOptions{TTL: 250 * time.Millisecond, AutoExtend: true}},
		{name: "node timeout 12 ms, TTL 60 ms", nodeTimeout: 12 * time.Millisecond, options: MutexOptions{TTL: 60 * time.Millisecond, AutoExtend: true}},
		{name: "node timeout 13 ms, TTL 60 ms", nodeTimeout: 13 * time.Millisecond, options: MutexOptions{TTL: 60 * time.Millisecond, AutoExtend: true},
			err: "five node timeouts"},
		{name: "not renewed", options: MutexOptions{TTL: 60 * time.Millisecond}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			client, err := New([]string{"127.0.0.1:1"}, Options{NodeTimeout: test.nodeTimeout})
			require.NoError(t, err)
			defer client.Close()
			err = client.NewMutex("k", test.options).Unlock(context.Background())
			if test.err == "" {
				assert.ErrorIs(t, err, ErrNotHeld, "accepted")
				return
			}
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.ErrorContains(t, err, test.err)
		})
	}

	client, err := New([]string{"127.0.0.1:1"}, Options{})
	require.NoError(t, err)
	defer client.Close()
	err = client.Do(context.Background(), "k", MutexOptions{TTL: 60 * time.Millisecond}, func(context.Context) error { return nil })
	assert.ErrorIs(t, err, ErrInvalidOptions, "Do renews its hold")
}

// advancingObserver moves the clock forward when it is told of the first
// successful acquisition, as a slow observer would take the time.
type advancingObserver struct {
	NopObserver
	clock    *manualClock
	by       time.Duration
	once     sync.Once
	mu       sync.Mutex
	acquired int
	lost     int
}

func (o *advancingObserver) OnAcquire(event AcquireEvent) {
	if event.Err != nil {
		return
	}
	o.mu.Lock()
	o.acquired++
	o.mu.Unlock()
	o.once.Do(func() { o.clock.Advance(o.by) })
}

func (o *advancingObserver) OnLost(LostEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lost++
}

// Item 4: the validity is checked at the moment Lock or TryLock returns:
// no observer runs between the check and the return, and a hold whose
// validity ended by then is not returned: the attempt failed, and its
// keys are released.
func TestLockNeverReturnsAHoldWhoseValidityEnded(t *testing.T) {
	const ttl = 10 * time.Second
	tests := []struct {
		name     string
		tryLock  bool
		maxTries int
		// retried is set when Lock tries again after the attempt whose
		// hold ended.
		retried bool
	}{
		{name: "TryLock", tryLock: true},
		{name: "Lock with one try", maxTries: 1},
		{name: "Lock", retried: true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			clock := newManualClock()
			observer := &advancingObserver{clock: clock, by: ttl}
			client := startCluster(t, 3, redistest.Options{}).client(t, Options{clock: clock, Observer: observer,
				RetryDelayMin: time.Millisecond, RetryDelayMax: time.Millisecond})
			m := client.NewMutex("k", MutexOptions{TTL: ttl, MaxTries: test.maxTries})
			var err error
			if test.tryLock {
				err = m.TryLock(context.Background())
			} else {
				err = m.Lock(context.Background())
			}
			if !test.retried {
				require.ErrorIs(t, err, ErrNotAcquired, "returned a hold whose validity ended %v before", clock.Now().Sub(m.Until()))
				assert.Equal(t, repeat("", 3), client.values(t, "k"), "the hold that ended was released")
				assert.ErrorIs(t, m.Unlock(context.Background()), ErrNotHeld)
				return
			}
			require.NoError(t, err)
			assert.True(t, clock.Now().Before(m.Until()), "returned a hold whose validity ended %v before", clock.Now().Sub(m.Until()))
			observer.mu.Lock()
			assert.Equal(t, 2, observer.acquired, "the second attempt's hold was returned")
			observer.mu.Unlock()
			require.NoError(t, m.Unlock(context.Background()))
		})
	}
}
