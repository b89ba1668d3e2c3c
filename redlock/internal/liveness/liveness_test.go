package liveness

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/mux"
)

// manualClock is a clock that moves only when told.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// testLock is a Lock whose ends are sent on ended.
type testLock struct {
	hold   Hold
	margin time.Duration
	ended  chan uint64
}

func (l *testLock) Hold() *Hold                { return &l.hold }
func (l *testLock) LossMargin() time.Duration  { return l.margin }
func (l *testLock) EndCame(generation uint64)  { l.ended <- generation }
func (l *testLock) Keys() []string             { return []string{"k"} }
func (l *testLock) RenewNow(generation uint64) {}
func newTestLock(until time.Time) *testLock {
	l := &testLock{ended: make(chan uint64, 1)}
	l.hold.StartLocked([]byte("token"), until.Add(-time.Minute), until, 0, time.Minute)
	return l
}

func TestEndsSignalTheEndsThatCame(t *testing.T) {
	now := time.Now()
	clock := &manualClock{now: now}
	var ends Ends[*testLock]
	ends.Init(clock)
	defer ends.Close()
	later, due := newTestLock(now.Add(time.Hour)), newTestLock(now)
	for _, l := range []*testLock{later, due} {
		l.hold.Mu.Lock()
		ends.SetLocked(l)
		l.hold.Mu.Unlock()
	}
	select {
	case generation := <-due.ended:
		assert.Equal(t, due.hold.Generation, generation)
	case <-time.After(time.Minute):
		t.Fatal("the end that came was not signalled")
	}
	assert.Equal(t, 1, later.hold.endPlace, "the later end is still watched")
	assert.Empty(t, later.ended)
}

func TestRegistryListsTheHoldsUntilClose(t *testing.T) {
	var registry Registry[*testLock]
	first, second, third := newTestLock(time.Now()), newTestLock(time.Now()), newTestLock(time.Now())
	for _, l := range []*testLock{first, second, third} {
		require.True(t, registry.AddLocked(l))
	}
	registry.RemoveLocked(first)
	registry.RemoveLocked(first) // not listed any more: nothing happens
	assert.ElementsMatch(t, []*testLock{second, third}, registry.Close())
	assert.False(t, registry.AddLocked(first), "nothing is listed after Close")
}

func TestRenewerServesTheLatestRenewalOfALock(t *testing.T) {
	now := time.Now()
	clock := &manualClock{now: now}
	var closed atomic.Bool
	served := make(chan []Renewal[*testLock], 1)
	var renewer Renewer[*testLock]
	renewer.Init(clock, &closed, func(due []Renewal[*testLock]) {
		fresh := []Renewal[*testLock]{}
		for _, event := range due {
			if !event.Stale() {
				fresh = append(fresh, event)
			}
		}
		served <- fresh
	})
	defer renewer.Close()
	l := newTestLock(now.Add(time.Hour))
	due := now.Add(time.Hour) // both are queued before they come due
	require.True(t, renewer.Schedule(Renewal[*testLock]{Lock: l, Generation: 1, Due: due}))
	require.True(t, renewer.Schedule(Renewal[*testLock]{Lock: l, Generation: 1, Due: due, Early: time.Second}))
	clock.mu.Lock()
	clock.now = due
	clock.mu.Unlock()
	renewer.Wake() // the timer runs in real time
	select {
	case fresh := <-served:
		require.Len(t, fresh, 1)
		assert.Equal(t, time.Second, fresh[0].Early, "the later renewal replaced the first")
	case <-time.After(time.Minute):
		t.Fatal("the renewals that came due were not served")
	}
	closed.Store(true)
	assert.False(t, renewer.Schedule(Renewal[*testLock]{Lock: l, Generation: 1, Due: now}), "nothing is scheduled after the client closed")
}

// renewingLock is a testLock that counts its RenewNow calls.
type renewingLock struct {
	testLock
	renewed atomic.Int32
}

func (l *renewingLock) RenewNow(generation uint64) { l.renewed.Add(1) }

// A change reported under the tag of an own write still under way came
// after that write's reply, on the connection that carried it (a tracked
// round): it is from outside, on any node, and the hold renews at once.
// One under an older tag came before the write, which answers it.
func TestChangeDuringTheOwnWriteRenewsTheHold(t *testing.T) {
	l := &renewingLock{testLock: testLock{ended: make(chan uint64, 1)}}
	l.hold.StartLocked([]byte("token"), time.Now(), time.Now().Add(time.Minute), 0, time.Minute)
	var w Watcher[*renewingLock]
	w.Init(3, &manualClock{now: time.Now()}, func() *mux.Subscriber { return nil }, func(int, error) {})
	defer w.Close()
	w.Watch(l)
	l.hold.Mu.Lock()
	l.hold.Watching = []bool{true, true, false}
	l.hold.WatchTag, l.hold.Writing = w.NewWriteTag(), true
	l.hold.Mu.Unlock()

	w.Invalidated(0, "k", l.hold.WatchTag-1)
	assert.Zero(t, l.renewed.Load(), "a change the write answers")
	w.Invalidated(2, "k", l.hold.WatchTag)
	assert.Equal(t, int32(1), l.renewed.Load(), "a change after the write's reply, on a node not watched before it")
}
