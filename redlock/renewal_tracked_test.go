package redlock

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// A renewal of a watched hold is one command per node: it goes over the
// subscription connection that tracks the keys, and its reply arms them
// again, with no read of its own and no report of its own write. Five
// renewals run five scripts on each node; the keys stay armed where the
// hold watches them.
func TestWatchedRenewalIsOneCommandPerNode(t *testing.T) {
	nodes, client, m, observer := watchedHold(t)
	scripts := func(node int) int {
		return client.commandCalls(t, node, "evalsha") + client.commandCalls(t, node, "eval")
	}
	before := make([]int, len(nodes.servers))
	for node := range nodes.servers {
		before[node] = scripts(node)
	}

	const renewals = 5
	for range renewals {
		m.renewNow(holdGeneration(m))
		event := <-observer.extensions
		require.NoError(t, event.Err)
	}
	require.True(t, waitUntil(func() bool { return armingSettled(t, client, m) }), "the hold's key is armed after its renewals")
	m.hold.Mu.Lock()
	watching := append([]bool(nil), m.hold.Watching...)
	m.hold.Mu.Unlock()
	assert.Equal(t, []bool{true, true, true}, watching, "every node confirmed, every reply was awaited")
	for node := range nodes.servers {
		assert.Equal(t, renewals, scripts(node)-before[node], "node %d: the scripts run for %d renewals", node, renewals)
	}
}

// renewingObserver renews the hold at once from the first automatic
// extension it is told of, while the renewer still handles it, as the
// watcher does when a change is reported before the renewal's end.
type renewingObserver struct {
	extendObserver
	m       *Mutex
	renewed bool
}

func (o *renewingObserver) OnExtend(event ExtendEvent) {
	if event.Automatic && !o.renewed {
		o.renewed = true
		o.m.renewNow(holdGeneration(o.m))
	}
	o.extendObserver.OnExtend(event)
}

// A renewal asked for while one is under way stands: the one that ends
// does not put the next back to its schedule, ten seconds away.
func TestRenewNowDuringARenewalStands(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	observer := &renewingObserver{extendObserver: extendObserver{extensions: make(chan ExtendEvent, 2)}}
	client := nodes.client(t, Options{Observer: observer, Quarantine: QuarantineOff})
	ctx := context.Background()
	m := client.NewMutex("renewed", MutexOptions{TTL: 30 * time.Second, AutoExtend: true})
	observer.m = m
	require.NoError(t, m.Lock(ctx))
	defer m.Unlock(ctx)
	m.renewNow(holdGeneration(m))
	for i := range 2 {
		select {
		case event := <-observer.extensions:
			require.NoError(t, event.Err)
		case <-time.After(5 * time.Second):
			t.Fatalf("extension %d did not come before the renewal's schedule", i+1)
		}
	}
}

// holdGeneration returns the generation of m's hold.
func holdGeneration(m *Mutex) uint64 {
	m.hold.Mu.Lock()
	defer m.hold.Mu.Unlock()
	return m.hold.Generation
}

// A watched hold's extension waits for every node's reply, so the node
// that answers last, after the quorum, is one the hold had: a key deleted
// there from outside makes the hold renew at once, and the renewal
// repairs that node.
func TestWatchedHoldRepairsTheLastNodeToAnswer(t *testing.T) {
	nodes, client, m, observer := watchedHold(t)
	// A renewal makes the last node one the hold had: the acquisition
	// stopped at the quorum.
	m.renewNow(holdGeneration(m))
	require.NoError(t, (<-observer.extensions).Err)

	last := len(nodes.servers) - 1
	client.do(t, last, "DEL", "watched")
	select {
	case event := <-observer.extensions:
		require.NoError(t, event.Err)
	case <-time.After(5 * time.Second):
		t.Fatal("the deletion went unnoticed: no extension before the renewal's schedule")
	}
	values := client.values(t, "watched")
	assert.Equal(t, values[0], values[last], "node %d got the hold's key back", last)
}

// watchedHold returns a Client over 3 real nodes, without the quarantine,
// whose Mutex "watched" holds a renewed hold (TTL 30 s) armed on the nodes
// it watches, and the observer of its automatic extensions. The hold is
// released at the end of the test.
func watchedHold(t *testing.T) (*cluster, *Client, *Mutex, *extendObserver) {
	t.Helper()
	redistest.RequireReal(t) // key tracking needs redis-server
	nodes := startCluster(t, 3, redistest.Options{})
	observer := &extendObserver{extensions: make(chan ExtendEvent, 1)}
	// Without the quarantine's markers, the hold's key is the only key the
	// nodes track.
	client := nodes.client(t, Options{Observer: observer, Quarantine: QuarantineOff})
	m := client.NewMutex("watched", MutexOptions{TTL: 30 * time.Second, AutoExtend: true})
	require.NoError(t, m.Lock(context.Background()))
	t.Cleanup(func() { m.Unlock(context.Background()) })
	require.True(t, waitUntil(func() bool { return armingSettled(t, client, m) }), "the hold's key was armed")
	return nodes, client, m, observer
}

// A watched hold's keys are armed again on the subscription connection
// that replaces one that ended: a cut there is noticed as before.
func TestWatchedHoldIsArmedAgainAfterAReconnection(t *testing.T) {
	_, client, m, observer := watchedHold(t)
	const node = 1
	killTrackingConnection(t, client, node)
	// The end of the connection makes the hold renew; then the new one
	// arms the key again.
	require.NoError(t, (<-observer.extensions).Err)
	require.True(t, waitUntil(func() bool { return armingSettled(t, client, m) && trackedKeys(t, client, node) == 1 }),
		"the hold's key was not armed again on node %d", node)
	select {
	case <-observer.extensions: // a renewal that came meanwhile
	default:
	}

	client.do(t, node, "PEXPIRE", "watched", "5000")
	select {
	case event := <-observer.extensions:
		require.NoError(t, event.Err)
	case <-time.After(5 * time.Second):
		t.Fatal("the cut after the reconnection went unnoticed")
	}
}

// killTrackingConnection ends the connection of client that tracks keys
// on node: its subscription connection.
func killTrackingConnection(t *testing.T, client *Client, node int) {
	t.Helper()
	for line := range strings.Lines(string(client.do(t, node, "CLIENT", "LIST").Str)) {
		var id, flags string
		for field := range strings.FieldsSeq(line) {
			if value, ok := strings.CutPrefix(field, "id="); ok {
				id = value
			}
			if value, ok := strings.CutPrefix(field, "flags="); ok {
				flags = value
			}
		}
		if strings.Contains(flags, "t") {
			client.do(t, node, "CLIENT", "KILL", "ID", id)
			return
		}
	}
	t.Fatalf("node %d has no connection that tracks keys", node)
}

// The keys of many watched holds are all armed again after a
// reconnection, batch after batch on one goroutine, not on a goroutine
// per hold: at 100,000 holds those took a gigabyte of stacks.
func TestManyWatchedHoldsAreArmedAgainOnOneGoroutine(t *testing.T) {
	redistest.RequireReal(t)
	nodes := startCluster(t, 3, redistest.Options{})
	client := nodes.client(t, Options{Quarantine: QuarantineOff})
	const holds, node = 500, 1
	ctx := context.Background()
	mutexes := make([]*Mutex, holds)
	var group sync.WaitGroup
	for i := range mutexes {
		mutexes[i] = client.NewMutex("held:"+strconv.Itoa(i), MutexOptions{TTL: 30 * time.Second, AutoExtend: true})
		group.Go(func() { assert.NoError(t, mutexes[i].Lock(ctx)) })
	}
	group.Wait()
	armed := func() bool { return trackedKeys(t, client, node) == holds }
	// Slow under the race detector: a minute at most.
	require.True(t, waitUntilWithin(time.Minute, armed), "the holds' keys were armed")

	killTrackingConnection(t, client, node)
	require.True(t, waitUntilWithin(time.Minute, armed), "the holds' keys were not all armed again")
	// The renewals that the end of the connection set off are over: every
	// hold is armed by a read on the next reconnection.
	require.True(t, waitUntilWithin(time.Minute, func() bool {
		for _, m := range mutexes {
			m.hold.Mu.Lock()
			writing := m.hold.Writing
			m.hold.Mu.Unlock()
			if writing {
				return false
			}
		}
		return true
	}))
	before := runtime.NumGoroutine()
	client.watcher.reconnected(node)
	assert.Less(t, runtime.NumGoroutine()-before, 50, "goroutines started to arm the keys again")
}
