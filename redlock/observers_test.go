package redlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// journalObserver writes each event it is told of, with its name, into a
// journal that several observers share.
type journalObserver struct {
	name    string
	journal *journal
}

// journal is the list of events told to journalObservers, in order.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(entry string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, entry)
}

func (j *journal) read() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.entries...)
}

func (o journalObserver) OnAcquire(event AcquireEvent) {
	o.journal.add(o.name + " acquire " + event.Key)
}
func (o journalObserver) OnRelease(event ReleaseEvent) {
	o.journal.add(o.name + " release " + event.Key)
}
func (o journalObserver) OnExtend(event ExtendEvent) { o.journal.add(o.name + " extend " + event.Key) }
func (o journalObserver) OnLost(event LostEvent)     { o.journal.add(o.name + " lost " + event.Key) }
func (o journalObserver) OnNodeError(event NodeErrorEvent) {
	o.journal.add(o.name + " node error " + event.Address)
}

func TestObserversSkipsNilAndFlattens(t *testing.T) {
	j := &journal{}
	a, b, c := journalObserver{"a", j}, journalObserver{"b", j}, journalObserver{"c", j}
	tests := []struct {
		name      string
		observers []Observer
		want      Observer // compared when not nil
		wantNil   bool
		wantNames []string // told in this order otherwise
	}{
		{name: "none", wantNil: true},
		{name: "only nil", observers: []Observer{nil, nil}, wantNil: true},
		{name: "one", observers: []Observer{a}, want: a},
		{name: "one among nil", observers: []Observer{nil, a, nil}, want: a},
		{name: "two", observers: []Observer{a, b}, wantNames: []string{"a", "b"}},
		{name: "nested", observers: []Observer{Observers(a, b), nil, c}, wantNames: []string{"a", "b", "c"}},
		{name: "nested nothing", observers: []Observer{Observers(nil), a}, want: a},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Observers(tt.observers...)
			switch {
			case tt.wantNil:
				assert.Nil(t, got)
			case tt.want != nil:
				assert.Equal(t, tt.want, got)
			default:
				list, ok := got.(observerList)
				require.True(t, ok, "%T", got)
				assert.Len(t, list, len(tt.wantNames))
			}
			if tt.wantNames == nil {
				return
			}
			j.entries = nil
			got.OnAcquire(AcquireEvent{Key: "k"})
			got.OnRelease(ReleaseEvent{Key: "k"})
			got.OnExtend(ExtendEvent{Key: "k"})
			got.OnLost(LostEvent{Key: "k"})
			got.OnNodeError(NodeErrorEvent{Address: "127.0.0.1:1"})
			var want []string
			for _, event := range []string{"acquire k", "release k", "extend k", "lost k", "node error 127.0.0.1:1"} {
				for _, name := range tt.wantNames {
					want = append(want, name+" "+event)
				}
			}
			assert.Equal(t, want, j.read())
		})
	}
}

// The observers given to Observers are kept apart from the caller's
// slice: changing it afterwards changes nothing.
func TestObserversCopiesItsArguments(t *testing.T) {
	j := &journal{}
	observers := []Observer{journalObserver{"a", j}, journalObserver{"b", j}}
	combined := Observers(observers...)
	observers[0] = journalObserver{"changed", j}
	combined.OnLost(LostEvent{Key: "k"})
	assert.Equal(t, []string{"a lost k", "b lost k"}, j.read())
}

// Each observer of a Client given by Observers is told of the Client's
// real events.
func TestObserversTellEachObserverOfAClient(t *testing.T) {
	j := &journal{}
	client := startCluster(t, 3, redistest.Options{}).client(t, Options{
		Observer: Observers(journalObserver{"a", j}, nil, journalObserver{"b", j}),
	})
	ctx := context.Background()
	m := client.NewMutex("observers", MutexOptions{})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, []string{"a acquire observers", "b acquire observers", "a release observers", "b release observers"}, j.read())
}

// countingEvents counts the events it is told of, without allocating.
type countingEvents struct {
	events atomic.Int64
}

func (o *countingEvents) OnAcquire(AcquireEvent)     { o.events.Add(1) }
func (o *countingEvents) OnRelease(ReleaseEvent)     { o.events.Add(1) }
func (o *countingEvents) OnExtend(ExtendEvent)       { o.events.Add(1) }
func (o *countingEvents) OnLost(LostEvent)           { o.events.Add(1) }
func (o *countingEvents) OnNodeError(NodeErrorEvent) { o.events.Add(1) }

// Passing an event on allocates nothing, whatever the event holds.
func TestObserversPassEventsWithoutAllocating(t *testing.T) {
	first, second := &countingEvents{}, &countingEvents{}
	combined := Observers(first, second)
	err := errors.New("an error")
	allocations := testing.AllocsPerRun(100, func() {
		combined.OnAcquire(AcquireEvent{Key: "k", Attempt: 1, Err: err})
		combined.OnRelease(ReleaseEvent{Key: "k", Err: err})
		combined.OnExtend(ExtendEvent{Key: "k", Err: err})
		combined.OnLost(LostEvent{Key: "k", Err: err})
		combined.OnNodeError(NodeErrorEvent{Key: "k", Address: "127.0.0.1:1", Err: err})
	})
	assert.Zero(t, allocations)
	assert.Equal(t, first.events.Load(), second.events.Load())
	assert.Positive(t, first.events.Load())
}
