package redlock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/workgroup"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// connectedClient returns a Client over addresses, closed when the test
// ends, with its connections up (see cluster.client).
func connectedClient(t *testing.T, addresses []string, options Options) *Client {
	t.Helper()
	return (&cluster{addresses: addresses}).client(t, options)
}

// trustedClient returns a Client over addresses, with a MaxTTL of 10 s,
// that trusts its nodes (TrustNodes: the test started them), and a
// context that ends after timeout.
func trustedClient(t *testing.T, addresses []string, timeout time.Duration) (context.Context, *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	client := connectedClient(t, addresses, Options{MaxTTL: 10 * time.Second})
	require.NoError(t, client.TrustNodes(ctx), "the test started the nodes")
	return ctx, client
}

// One Redis Cluster member is the single-instance lock on that cluster:
// each lock key lives on the master of its slot, keys with a hash tag
// carry a fence counter beside them, and a waiter is woken by a release
// on the master of its key's slot (sharded pub/sub).
func TestClusterMemberLocksOnTheMasterOfEachSlot(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	ctx, client := trustedClient(t, []string{cluster.Address()}, 20*time.Second)
	masters := map[string]bool{}
	for i := range 60 {
		key := "cluster:" + strconv.Itoa(i)
		m := client.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
		require.NoError(t, m.Lock(ctx))
		master := cluster.MasterOf(mux.Slot(key))
		assert.Equal(t, m.Token(), master.Do(t, "GET", key), "%s is on the master of slot %d", key, mux.Slot(key))
		masters[master.Addr()] = true
		require.NoError(t, m.Unlock(ctx))
	}
	assert.Len(t, masters, 3, "the keys spread over every master")

	fenced := client.NewMutex("{ledger}:1", MutexOptions{TTL: 10 * time.Second, Fencing: true, Keys: []string{"{ledger}:2"}})
	require.NoError(t, fenced.Lock(ctx))
	assert.Positive(t, fenced.Fence())
	require.NoError(t, fenced.Unlock(ctx))

	holder := client.NewMutex("{wake}", MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(ctx))
	waiterClient := connectedClient(t, []string{cluster.Address()}, Options{MaxTTL: 10 * time.Second, RetryDelayMin: time.Hour, RetryDelayMax: time.Hour})
	waiter := waiterClient.NewMutex("{wake}", MutexOptions{TTL: 10 * time.Second})
	var waiting workgroup.Group
	waiting.Go(func() error { return waiter.Lock(ctx) })
	require.True(t, waitUntil(func() bool { return waiterClient.notifier.Waiting() == 1 }), "the waiter waits")
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, waiting.Wait(), "with retries an hour apart, only the release announced on the cluster woke it")
	require.NoError(t, waiter.Unlock(ctx))
}

// On a cluster member, the keys a lock writes together must share a hash
// slot: several keys without a common hash tag, and the keys a lock adds
// beside its own (fence counter, line, readers, permits) to a key without
// a hash tag, are refused when the lock is made, with the remedy. A plain
// single key needs no tag.
func TestClusterMemberRefusesKeysInSeveralSlots(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	client := connectedClient(t, []string{cluster.Address()}, Options{})
	ctx := context.Background()
	for name, err := range map[string]error{
		"two keys":   client.NewMutex("orders:1", MutexOptions{Keys: []string{"orders:2"}}).TryLock(ctx),
		"fenced":     client.NewMutex("orders:1", MutexOptions{Fencing: true}).TryLock(ctx),
		"fair":       client.NewMutex("orders:1", MutexOptions{Fair: true}).TryLock(ctx),
		"read/write": client.NewRWMutex("orders:1", MutexOptions{}).TryRLock(ctx),
		"semaphore":  semaphoreError(client.NewSemaphore("workers", 3, MutexOptions{}).TryAcquire(ctx)),
	} {
		require.ErrorIs(t, err, ErrInvalidOptions, name)
		assert.Contains(t, err.Error(), "hash tag", name)
	}
	for _, keys := range [][]string{{"orders:1"}, {"{orders}:1", "{orders}:2"}} {
		m := client.NewMutex(keys[0], MutexOptions{Keys: keys[1:], Fencing: len(keys) > 1})
		assert.NotErrorIs(t, m.TryLock(ctx), ErrInvalidOptions, "%v", keys)
	}
}

// semaphoreError returns the error of TryAcquire.
func semaphoreError(_ Permit, err error) error { return err }

// A failover of one shard of a cluster member, during a hold, quarantines
// that shard alone: the promoted replica's votes do not count until its
// marker is older than MaxTTL, the other shards' do, and the plain members
// of a mixed list keep the locks of the failed shard available. The hold
// made before stays exclusive.
func TestClusterMemberFailoverQuarantinesTheShardAlone(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, true, redistest.Options{})
	plain := redistest.StartN(t, 2, redistest.Options{})
	addresses := []string{cluster.Address(), plain[0].Addr(), plain[1].Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	options := Options{MaxTTL: 10 * time.Second}
	a := connectedClient(t, addresses, options)
	require.NoError(t, a.TrustNodes(ctx))
	failing := cluster.Masters[0] // the master of the shard that fails over, then its replica
	keyOn := func(onFailing bool, skip string) string {
		for i := range 10000 {
			key := "{shard" + strconv.Itoa(i) + "}"
			if key != skip && (cluster.MasterOf(mux.Slot(key)) == failing) == onFailing {
				return key
			}
		}
		t.Fatal("no key found")
		return ""
	}
	heldKey := keyOn(true, "")
	held := a.NewMutex(heldKey, MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, held.Lock(ctx))

	failing = cluster.Failover(0)
	require.Equal(t, failing, cluster.MasterOf(mux.Slot(heldKey)))

	b := connectedClient(t, addresses, options)
	require.ErrorIs(t, b.NewMutex(heldKey, MutexOptions{TTL: 10 * time.Second}).TryLock(ctx), ErrNotAcquired, "A holds it on the plain nodes")
	quarantined := func(key string) uint64 {
		before := b.Stats().Quarantined
		m := b.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
		require.NoError(t, m.TryLock(ctx), key)
		require.NoError(t, m.Unlock(ctx))
		return b.Stats().Quarantined - before
	}
	assert.Equal(t, uint64(1), quarantined(keyOn(true, heldKey)), "the promoted master's vote does not count")
	assert.Equal(t, uint64(0), quarantined(keyOn(false, "")), "the other shards' votes do")

	alone := connectedClient(t, []string{cluster.Address()}, options)
	require.NoError(t, alone.NewMutex(keyOn(false, ""), MutexOptions{TTL: 10 * time.Second}).TryLock(ctx), "the cluster alone still locks the other shards' keys")
	err := alone.NewMutex(keyOn(true, heldKey), MutexOptions{TTL: 10 * time.Second}).TryLock(ctx)
	var quorum *QuorumError
	require.ErrorAs(t, err, &quorum)
	assert.Equal(t, OutcomeQuarantined, quorum.Nodes[0].Outcome, "nor the failed shard's keys")
	require.NoError(t, held.Unlock(ctx))
}

// A slot moves from one master to another (CLUSTER SETSLOT IMPORTING and
// MIGRATING, MIGRATE of its keys, SETSLOT NODE) while workers lock and
// unlock keys of that slot: the locks follow the ASK and MOVED redirects,
// no two holders of a key ever overlap, and every worker goes on locking
// once the slot has moved.
func TestClusterMemberLocksThroughAResharding(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	ctx, client := trustedClient(t, []string{cluster.Address()}, 60*time.Second)
	const keys, workers = 8, 4
	slot := mux.Slot("{moving}")
	source := cluster.MasterOf(slot)
	target := cluster.Masters[0]
	if target == source {
		target = cluster.Masters[1]
	}

	var holders [keys]atomic.Int32
	var cycles [workers]atomic.Int64
	var overlaps atomic.Int64
	stop := make(chan struct{})
	var load workgroup.Group
	for w := range workers {
		load.Go(func() error {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return nil
				default:
				}
				k := (w + i) % keys
				m := client.NewMutex("{moving}:"+strconv.Itoa(k), MutexOptions{TTL: 5 * time.Second})
				if err := m.Lock(ctx); err != nil {
					return err
				}
				if holders[k].Add(1) != 1 {
					overlaps.Add(1)
				}
				holders[k].Add(-1)
				if err := m.Unlock(ctx); err != nil && !errors.Is(err, ErrLockLost) {
					return err
				}
				cycles[w].Add(1)
			}
		})
	}
	allWorkersPast := func(floor [workers]int64) bool {
		for w := range workers {
			if cycles[w].Load() <= floor[w]+5 {
				return false
			}
		}
		return true
	}
	var start [workers]int64
	require.True(t, waitUntil(func() bool { return allWorkersPast(start) }), "the load runs")

	cluster.MoveSlot(slot, target)
	var moved [workers]int64
	for w := range workers {
		moved[w] = cycles[w].Load()
	}
	require.True(t, waitUntil(func() bool { return allWorkersPast(moved) }), "every worker goes on locking once the slot moved")
	close(stop)
	require.NoError(t, load.Wait())
	assert.Zero(t, overlaps.Load(), "no two holders of a key overlapped")
	assert.Equal(t, target, cluster.MasterOf(slot), "the slot moved")
}

// On a Client with a cluster member, a release is announced with sharded
// pub/sub, on the master of the key's slot: SPUBLISH on the release
// channel of the key's slot (naming.ShardedChannelPrefix with a hash tag
// of the slot), which a client subscribed there with SSUBSCRIBE hears.
func TestClusterMemberAnnouncesReleasesOnTheKeysSlot(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	ctx, client := trustedClient(t, []string{cluster.Address()}, 20*time.Second)
	key := "announced"
	channel := naming.ShardedChannelPrefix(mux.SlotTag(mux.Slot(key))) + key
	require.Equal(t, mux.Slot(key), mux.Slot(channel), "the channel is in the key's slot")

	listener := cluster.MasterOf(mux.Slot(key)).Session()
	listener.Send("SSUBSCRIBE", channel)
	require.Equal(t, "[ssubscribe "+channel+" 1]", listener.Receive())
	m := client.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	announcement := listener.Receive()
	assert.True(t, strings.HasPrefix(announcement, "[smessage "+channel+" "), "the release was announced on the key's master: %s", announcement)
}

// Waiters of a cluster member listen on the master of their key's slot,
// not on one node of the address: with the address's first node gone (its
// replica took its slots), a waiter whose retries are an hour apart is
// still woken by a release. And when the key's slot moves to another
// master, the old master ends the subscription, the Client makes it again
// on the new one, and the next release there wakes the next waiter.
func TestClusterMemberWaitersListenOnTheirKeysMaster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, true, redistest.Options{})
	cluster.Crash(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	options := Options{MaxTTL: 10 * time.Second, DialTimeout: time.Second}
	holderClient := connectedClient(t, []string{cluster.Address()}, options)
	require.NoError(t, holderClient.TrustNodes(ctx))
	options.RetryDelayMin, options.RetryDelayMax = time.Hour, time.Hour
	waiterClient := connectedClient(t, []string{cluster.Address()}, options)
	key := "{listening}"
	slot := mux.Slot(key)
	if cluster.MasterOf(slot) == cluster.Replicas[0] {
		cluster.MoveSlot(slot, cluster.Masters[1])
	}

	holder := holderClient.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(ctx))
	waiter := waiterClient.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
	waiting := lockSubscribed(t, ctx, waiter)
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, waiting.Wait(), "with retries an hour apart, only the release announced on the key's master woke it")

	// The slot moves while the waiter holds the key and another waits.
	next := waiterClient.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
	waiting = lockSubscribed(t, ctx, next)
	for _, master := range []*redistest.Server{cluster.Masters[1], cluster.Masters[2]} {
		if master != cluster.MasterOf(slot) {
			cluster.MoveSlot(slot, master)
			break
		}
	}
	require.NoError(t, waiter.Unlock(ctx))
	require.NoError(t, waiting.Wait(), "the subscription followed the slot to its new master")
	require.NoError(t, next.Unlock(ctx))
}

// A Client with a cluster member among plain ones announces every release
// with sharded pub/sub, on every node (one command goes to every node, and
// Redis 7 has sharded pub/sub outside a cluster too): a waiter whose
// retries are an hour apart is woken by a quorum of the nodes'
// announcements, and also when a plain node is gone.
func TestMixedMembersWakeWaitersWithShardedAnnouncements(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	plain := startCluster(t, 2, redistest.Options{})
	addresses := append([]string{cluster.Address()}, plain.addresses...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	options := Options{MaxTTL: 10 * time.Second}
	holderClient := connectedClient(t, addresses, options)
	require.NoError(t, holderClient.TrustNodes(ctx))
	options.RetryDelayMin, options.RetryDelayMax = time.Hour, time.Hour
	waiterClient := connectedClient(t, addresses, options)
	key := "{mixed}"
	listener := plain.servers[0].Session()
	listener.Send("SSUBSCRIBE", waiterClient.releasedChannel(key))
	require.Equal(t, "[ssubscribe "+waiterClient.releasedChannel(key)+" 1]", listener.Receive())

	for round := range 2 {
		holder := holderClient.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
		require.NoError(t, holder.Lock(ctx))
		waiter := waiterClient.NewMutex(key, MutexOptions{TTL: 10 * time.Second})
		waiting := lockSubscribed(t, ctx, waiter)
		require.NoError(t, holder.Unlock(ctx))
		require.NoError(t, waiting.Wait(), "round %d: only the announced release woke it", round)
		require.NoError(t, waiter.Unlock(ctx))
		if round == 0 {
			announcement := listener.Receive()
			assert.True(t, strings.HasPrefix(announcement, "[smessage "), "a plain node announced with SPUBLISH: %s", announcement)
			plain.servers[1].Kill9()
		}
	}
}

// lockSubscribed starts waiter's Lock and returns once the Lock waits, the
// only waiter of its key in its Client, subscribed to its release channel
// on a quorum of nodes.
func lockSubscribed(t *testing.T, ctx context.Context, waiter *Mutex) *workgroup.Group {
	t.Helper()
	var waiting workgroup.Group
	waiting.Go(func() error { return waiter.Lock(ctx) })
	n := &waiter.client.notifier
	require.True(t, waitUntil(func() bool {
		waiters, ok := n.Channels()[waiter.client.releasedChannel(waiter.key)]
		return ok && waiters.Confirmations >= waiter.client.need && waiters.Waiters == 1
	}), "the waiter waits, subscribed on a quorum")
	return &waiting
}

// A cluster member watches what a plain node watches, each key on the
// connection to its slot's master: a renewed hold's key cut short from
// outside is noticed at once (here the renewal is 3.3 s away), and a flush
// of a master that stays up, which no connection of the Client sees
// restart, quarantines that master at once, through its epoch marker.
func TestClusterMemberWatchesKeysAndMarkers(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	observer := &extendObserver{extensions: make(chan ExtendEvent, 4)}
	ctx, trusting := trustedClient(t, []string{cluster.Address()}, 20*time.Second)
	require.NoError(t, trusting.Close())
	client := connectedClient(t, []string{cluster.Address()}, Options{MaxTTL: 10 * time.Second, Observer: observer})
	m := client.NewMutex("watched", MutexOptions{TTL: 10 * time.Second, AutoExtend: true})
	require.NoError(t, m.Lock(ctx))
	defer m.Unlock(ctx)
	master := cluster.MasterOf(mux.Slot("watched"))
	master.Do(t, "PEXPIRE", "watched", "100")
	select {
	case event := <-observer.extensions:
		require.NoError(t, event.Err, "the extension that answers the cut")
	case <-time.After(2 * time.Second):
		t.Fatal("the cut went unnoticed: no extension before the renewal's schedule")
	}

	require.True(t, waitUntil(func() bool { return client.quarantine.Armed(0) >= 3 }), "every master's marker is armed")
	flushed := cluster.Masters[0]
	flushed.Do(t, "FLUSHALL")
	require.True(t, waitUntil(func() bool { return client.quarantine.Pending(0) }), "the flush was noticed")
	for i := 0; ; i++ {
		key := "after:" + strconv.Itoa(i)
		if cluster.MasterOf(mux.Slot(key)) != flushed {
			continue
		}
		err := client.NewMutex(key, MutexOptions{TTL: 10 * time.Second}).TryLock(ctx)
		require.ErrorIs(t, err, ErrNotAcquired, "the flushed master's keys are quarantined")
		assert.Contains(t, err.Error(), "quarantined")
		break
	}
}
