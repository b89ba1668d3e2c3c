package redlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
)

// migrationTarget returns a master of cluster that does not serve slot.
func migrationTarget(cluster *redistest.Cluster, slot int) *redistest.Server {
	if source := cluster.MasterOf(slot); source != cluster.Masters[0] {
		return cluster.Masters[0]
	}
	return cluster.Masters[1]
}

// During a slot migration, a release whose key already moved meets ASK and
// runs on the importing master, while the slot's sharded channels are
// still served by the master it leaves, where waiters listen: the release
// is announced there too, and a waiter whose retries are an hour apart is
// woken long before the holder's TTL would have let it in.
func TestClusterMemberAnnouncesAReleaseThatFollowedAnAsk(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	options := Options{MaxTTL: time.Minute}
	holderClient := connectedClient(t, []string{cluster.Address()}, options)
	require.NoError(t, holderClient.TrustNodes(ctx))
	options.RetryDelayMin, options.RetryDelayMax = time.Hour, time.Hour
	waiterClient := connectedClient(t, []string{cluster.Address()}, options)
	key := "{asked}"
	slot := mux.Slot(key)

	holder := holderClient.NewMutex(key, MutexOptions{TTL: time.Minute})
	require.NoError(t, holder.Lock(ctx))
	waiter := waiterClient.NewMutex(key, MutexOptions{TTL: time.Minute})
	waiting := lockSubscribed(t, ctx, waiter)

	migration := cluster.StartMigration(slot, migrationTarget(cluster, slot))
	migration.Move(key)
	require.NoError(t, holder.Unlock(ctx), "the release followed the ASK to the importing master")
	woken := make(chan error, 1)
	go func() { woken <- waiting.Wait() }()
	select {
	case err := <-woken:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not woken: the release was announced where nobody listens")
	}
	require.NoError(t, waiter.Unlock(ctx))
	migration.MoveAll()
	migration.Finish()
}

// A command over several keys of a slot being migrated that the target
// does not all have (none there yet, as for a new lock) is answered
// TRYAGAIN: a passing state of a resharding, not a configuration error. A
// Lock of a two-key Mutex waits through it, and acquires once the
// migration ends.
func TestClusterMemberLockWaitsThroughTryAgain(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	observer := newWaitObserver()
	client := connectedClient(t, []string{cluster.Address()}, Options{MaxTTL: time.Minute, Observer: observer})
	require.NoError(t, client.TrustNodes(ctx))
	keys := []string{"{mk:1}:1", "{mk:1}:2"}
	slot := mux.Slot(keys[0])
	target := migrationTarget(cluster, slot)

	migration := cluster.StartMigration(slot, target)
	m := client.NewMutex(keys[0], MutexOptions{TTL: time.Minute, Keys: keys[1:]})
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(ctx) }()
	select {
	case <-observer.failed:
	case err := <-locked:
		t.Fatalf("the Lock returned while the slot migrates: %v", err)
	}
	migration.Finish()
	require.NoError(t, <-locked, "the Lock waited through TRYAGAIN")
	assert.Equal(t, m.Token(), target.Do(t, "GET", keys[1]))
	require.NoError(t, m.Unlock(ctx))
}

// A release of a two-key Mutex whose slot is being migrated, one key moved
// and not the other, meets ASK, then TRYAGAIN on the importing master: it
// is no configuration error, and the release is carried through it, so
// that it reaches the keys once they have both moved, long before their
// TTL.
func TestClusterMemberCarriesAReleaseThroughTryAgain(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := connectedClient(t, []string{cluster.Address()}, Options{MaxTTL: time.Minute})
	require.NoError(t, client.TrustNodes(ctx))
	keys := []string{"{mk:1}:1", "{mk:1}:2"}
	slot := mux.Slot(keys[0])
	m := client.NewMutex(keys[0], MutexOptions{TTL: time.Minute, Keys: keys[1:]})
	require.NoError(t, m.Lock(ctx))

	source, target := cluster.MasterOf(slot), migrationTarget(cluster, slot)
	migration := cluster.StartMigration(slot, target)
	migration.Move(keys[1])
	assert.NotErrorIs(t, m.Unlock(ctx), ErrConfig, "TRYAGAIN is no configuration error")
	migration.Move(keys[0])
	migration.Finish()
	require.True(t, waitUntil(func() bool {
		return target.Do(t, "EXISTS", keys[0], keys[1]) == "0"
	}), "the release was carried through TRYAGAIN: the keys are gone long before their TTL")
	assert.Equal(t, "0", source.Do(t, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)), "nor left on the source")
}
