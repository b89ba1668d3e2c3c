//go:build linux

package safety_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/safety"
	"github.com/lockmux/lockmux/internal/workgroup"
	"github.com/lockmux/lockmux/redlock"
)

// canaryKit runs the documented-unsafe scenarios of RELIABILITY.md §8.4
// phase C and §8.5 (D1, D4, D15): two clients, each behind proxies of its
// own so that they can see different nodes, lock one key by script while
// a fault that Redlock does not survive is injected. The checker must
// find the violation each time: that is what proves it can fail.
type canaryKit struct {
	t        *testing.T
	cluster  *cluster
	rec      *safety.Recorder
	key      string
	ttl      time.Duration
	proxies  [2][]*faultnet.Proxy
	clients  [2]*redlock.Client
	workers  [2]*worker
	mutexes  [2]*redlock.Mutex
	resource *conn.Conn
	runs     int

	// refused counts the writes of the first holder that the resource
	// refused after the second wrote; regressions the second holders
	// whose fence was not above the first's (F2 loses the counters).
	refused, regressions int

	// elections are the clients' Elections named after the key, for the
	// canary of a broken election (electionRestart).
	elections [2]*redlock.Election
}

// canaryTTL is long enough for the scripted steps to happen well within
// the first hold's validity, even under the race detector.
const canaryTTL = 3 * time.Second

// newCanaryKit makes the kit's two clients, behind proxies, which it
// starts when proxies is nil.
func newCanaryKit(t *testing.T, c *cluster, rec *safety.Recorder, key string, proxies *[2][]*faultnet.Proxy) *canaryKit {
	k := &canaryKit{t: t, cluster: c, rec: rec, key: key, ttl: canaryTTL}
	if proxies == nil {
		proxies = &[2][]*faultnet.Proxy{c.proxies(t), c.proxies(t)}
	}
	k.proxies = *proxies
	var err error
	k.resource, err = conn.New(c.resource.Addr(), conn.Options{Scripts: []*conn.Script{fencedWriteScript}})
	require.NoError(t, err)
	t.Cleanup(func() { k.resource.Close() })
	for i := range 2 {
		config := &workerConfig{Name: fmt.Sprintf("canary%d", i+1), Keys: []string{key}, Addresses: proxyAddresses(k.proxies[i]),
			Resource: c.resource.Addr(), TTL: canaryTTL, NodeTimeout: 50 * time.Millisecond,
			RetryMin: 10 * time.Millisecond, RetryMax: 60 * time.Millisecond}
		k.clients[i], err = redlock.New(config.Addresses, config.clientOptions(nil))
		require.NoError(t, err)
		t.Cleanup(func() { k.clients[i].Close() })
		k.workers[i] = newWorker(config, config.Name+".g0", k.clients[i], k.resource, rec)
		// No renewal: the scenario's steps are exact.
		k.mutexes[i] = k.clients[i].NewMutex(key, redlock.MutexOptions{TTL: canaryTTL, Fencing: true})
		k.elections[i] = k.clients[i].NewElection(key, redlock.ElectionOptions{TTL: canaryTTL})
	}
	return k
}

// close closes the kit's clients.
func (k *canaryKit) close() {
	for _, client := range k.clients {
		client.Close()
	}
	k.resource.Close()
}

// begin marks the start of a canary window and returns its name.
func (k *canaryKit) begin(scenario string) string {
	k.runs++
	name := fmt.Sprintf("%s#%d", scenario, k.runs)
	k.rec.Record(safety.Event{Kind: safety.KindCanaryStart, What: name, Key: k.key})
	k.t.Logf("canary %s", name)
	return name
}

func (k *canaryKit) end(name string) {
	k.rec.Record(safety.Event{Kind: safety.KindCanaryEnd, What: name})
}

// cut partitions the clients as in the example of the essay "How to do
// distributed locking": the first sees A, B and C, the second C, D and E.
func (k *canaryKit) cut() {
	k.proxies[0][3].Partition()
	k.proxies[0][4].Partition()
	k.proxies[1][0].Partition()
	k.proxies[1][1].Partition()
}

// healAll turns every fault of the kit's proxies off.
func (k *canaryKit) healAll() {
	for _, list := range k.proxies {
		for _, p := range list {
			p.Pass()
		}
	}
}

// acquire locks the key for client i, retrying for up to timeout (a node
// that restarts makes attempts fail fast until it is back).
func (k *canaryKit) acquire(i int, timeout time.Duration) *holding {
	return k.acquireTarget(i, mutexTarget(k.mutexes[i]), timeout)
}

// acquireTarget is acquire for target t of client i.
func (k *canaryKit) acquireTarget(i int, t target, timeout time.Duration) *holding {
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		h, err := k.workers[i].acquire(context.Background(), t, time.Until(end), false)
		require.NoError(k.t, err)
		if h != nil {
			return h
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// writeBoth makes the second holder write, then the first: with fencing
// the first, older write must be refused.
func (k *canaryKit) writeBoth(first, second *holding) {
	_, err := k.workers[1].write(context.Background(), second)
	require.NoError(k.t, err)
	kind, err := k.workers[0].write(context.Background(), first)
	require.NoError(k.t, err)
	if kind == safety.KindWriteRejected {
		k.refused++
	}
	if second.fence <= first.fence {
		k.regressions++
		k.t.Logf("canary: fence regression, second holder %d after first %d (documented: the counters did not survive)", second.fence, first.fence)
	}
}

func (k *canaryKit) leave(i int, h *holding) {
	require.NoError(k.t, k.workers[i].leave(context.Background(), h))
}

// clockJump is the clock jump of the essay "How to do distributed
// locking" (F15 with F14): client 1 locks A, B, C; C's clock jumps forward
// past the TTL, expiring the key; client 2 locks C, D, E while client 1
// still holds a valid lock.
func (k *canaryKit) clockJump() {
	name := k.begin("clock-jump")
	defer k.end(name)
	k.cut()
	defer k.healAll()
	first := k.acquire(0, k.ttl)
	if first == nil {
		k.t.Errorf("canary %s: the first client did not acquire the lock", name)
		return
	}
	const c = 2
	k.cluster.setClock(c, k.cluster.offsets[c]+k.ttl.Milliseconds()+2000, k.cluster.rates[c])
	second := k.acquire(1, k.ttl/2)
	if second == nil {
		k.t.Errorf("canary %s: the second client did not acquire the lock after the jump", name)
		k.leave(0, first)
		return
	}
	k.writeBoth(first, second)
	k.leave(1, second)
	k.leave(0, first)
}

// restart is F2 with F14: client 1 locks A, B, C; C is killed and comes
// back at once with no data; client 2 locks C, D, E.
func (k *canaryKit) restart() {
	k.restartUnder("restart", "acquire the lock", func(i int) target { return mutexTarget(k.mutexes[i]) })
}

// electionRestart is restart for an election, which a node's loss of
// its keys breaks as it breaks the lock: client 1 leads with A, B, C; C
// restarts at once with no data; client 2 campaigns with C, D, E and
// leads while client 1 still does. The checker must find the two
// leaderships overlapping.
func (k *canaryKit) electionRestart() {
	k.restartUnder("election-restart", "lead", func(i int) target {
		return electionTarget(k.elections[i], "canary"+strconv.Itoa(i+1))
	})
}

// restartUnder runs the restart canary name on the targets that targetOf
// gives clients 1 and 2 (0 and 1); won says what a client did not do.
func (k *canaryKit) restartUnder(name, won string, targetOf func(i int) target) {
	name = k.begin(name)
	defer k.end(name)
	k.cut()
	defer k.healAll()
	first := k.acquireTarget(0, targetOf(0), k.ttl)
	if first == nil {
		k.t.Errorf("canary %s: the first client did not %s", name, won)
		return
	}
	const c = 2
	k.cluster.nodes[c].Kill9()
	k.cluster.nodes[c].Wipe()
	k.rec.Record(safety.Event{Kind: safety.KindWipe, What: "F2 restart without data", Node: nodeNames[c]})
	k.cluster.nodes[c].Restart(k.t)
	second := k.acquireTarget(1, targetOf(1), k.ttl/2)
	if second == nil {
		k.t.Errorf("canary %s: the second client did not %s after the restart", name, won)
		k.leave(0, first)
		return
	}
	k.writeBoth(first, second)
	k.leave(1, second)
	k.leave(0, first)
}

// drift runs the clocks of A, B and C at rate (F17): their keys expire
// early by real time. Client 1 holds the lock to the end of its validity
// while client 2 tries from a fifth of the TTL before it. Beyond the
// drift factor (1% + 2 ms) client 2 gets A, B and C while client 1 is
// still valid; within it, only after.
func (k *canaryKit) drift(rate float64) {
	name := k.begin(fmt.Sprintf("drift-%v", rate))
	defer k.end(name)
	for i := range 3 {
		k.cluster.setClock(i, k.cluster.offsets[i], rate)
	}
	defer func() {
		for i := range 3 {
			k.cluster.setClock(i, k.cluster.offsets[i], 1)
		}
	}()
	first := k.acquire(0, k.ttl)
	if first == nil {
		k.t.Errorf("canary %s: the first client did not acquire the lock", name)
		return
	}
	_, err := k.workers[0].write(context.Background(), first)
	require.NoError(k.t, err)
	until := first.held.Until()
	var contender workgroup.Group
	contender.Go(func() error {
		time.Sleep(time.Until(until.Add(-k.ttl / 5)))
		m := k.mutexes[1]
		var second *holding
		var err error
		for time.Now().Before(until.Add(300 * time.Millisecond)) {
			second, err = k.workers[1].acquire(context.Background(), mutexTarget(m), 100*time.Millisecond, true)
			if second != nil || err != nil {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if second == nil || err != nil {
			return err
		}
		if _, err := k.workers[1].write(context.Background(), second); err != nil {
			return err
		}
		return k.workers[1].leave(context.Background(), second)
	})
	time.Sleep(time.Until(until.Add(-time.Millisecond)))
	k.leave(0, first)
	require.NoError(k.t, contender.Wait())
}
