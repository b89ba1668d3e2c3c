package redlock

import (
	"context"
	"fmt"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/round"
)

// sameSlot returns why the keys of keySets, which one lock writes together
// in one script per node, cannot be written together on a node that is a
// Redis Cluster: they do not share a hash slot, and a script's keys must. It returns nil
// when no node is a cluster, or when they do share one. The keys a lock
// writes next to its own (a fence counter, a fair lock's line, a
// read/write lock's readers, a semaphore's permits) add a suffix to its
// key or name: they share its slot when it holds a hash tag.
func (c *Client) sameSlot(keySets ...[]string) error {
	if !c.hasCluster {
		return nil
	}
	first, slot := "", -1
	for _, keys := range keySets {
		for _, key := range keys {
			switch other := mux.Slot(key); {
			case slot < 0:
				first, slot = key, other
			case other != slot:
				return fmt.Errorf("%w: a node is a Redis Cluster, and the keys a lock writes together must share a hash slot: "+
					"%q (slot %d) and %q (slot %d) do not; name the resource in a hash tag, as in {orders:1}, in every key "+
					"(the fence counter, line, readers and permits add a suffix to it)", ErrInvalidOptions, first, slot, key, other)
			}
		}
	}
	return nil
}

// releasedChannelPrefix returns the start of the channel on which the
// releases of key are announced; the key follows it. On a Client with a
// Redis Cluster member, releases are announced with sharded pub/sub
// (SPUBLISH), on the master of the key's slot, and waiters subscribe there
// (SSUBSCRIBE): the channel's own slot must be the key's, and the prefix
// holds a hash tag of that slot (naming.ShardedChannelPrefix). Every node
// of such a Client announces so, plain nodes too (Redis 7 has sharded
// pub/sub outside a cluster as well): one command goes to every node.
func (c *Client) releasedChannelPrefix(key string) string {
	if !c.hasCluster {
		return releasedChannelPrefix
	}
	return naming.ShardedChannelPrefix(mux.SlotTag(mux.Slot(key)))
}

// releasedChannel returns the channel on which the releases of key are
// announced.
func (c *Client) releasedChannel(key string) string { return c.releasedChannelPrefix(key) + key }

// announceWhereAsked announces again, under message, the release that a
// round of m made on a Redis Cluster member after an ASK redirect
// (mux.Group.Asked): it did so on the master the keys' slot is being
// migrated to, while the master the slot leaves still serves the slot's
// sharded channels, where the waiters listen, until the migration ends.
// SPUBLISH goes to the master of the channel's slot in the member's slot
// map, which is that one. A fair lock's release is announced again
// without the first waiter in line, which only the node knew: it wakes a
// waiter as a plain lock's release does.
func (m *Mutex) announceWhereAsked(ctx context.Context, r *round.Round, message []byte) {
	if m.announceOn == "" {
		return
	}
	c := m.client
	for node, outcome := range r.Tally.Nodes {
		// Only the replies the round gathered are read: a node's outcome
		// is OutcomeConfirmed only then.
		if outcome.Outcome != round.OutcomeConfirmed || r.Mux.Reply(node).Int <= 0 || !c.group.Asked(r.Mux, node) {
			continue // nothing released, or announced where the waiters listen
		}
		channels := m.releasedChannels()
		requests := make([]*mux.Request, len(channels))
		for i, channel := range channels {
			requests[i] = mux.NewRequest("SPUBLISH", channel, string(message))
		}
		c.group.Do(ctx, node, requests...) // as in the scripts, an announcement that fails loses nothing else
	}
}
