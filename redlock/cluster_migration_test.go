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
