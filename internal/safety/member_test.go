//go:build linux

package safety_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
)

// The cluster member of the chaos run: its faults, and what the clients
// saw of them.

// memberObserver counts the votes of the cluster member that the
// in-process clients kept out by quarantine, which F36 reports.
type memberObserver struct {
	redlock.NopObserver
	quarantined atomic.Int64
}

func (o *memberObserver) OnNodeError(e redlock.NodeErrorEvent) {
	if e.Outcome == redlock.OutcomeQuarantined && strings.HasPrefix(e.Address, "redis-cluster://") {
		o.quarantined.Add(1)
	}
}

// slotMove is F25 on the cluster member: the slot of a lock's keys moves
// to another master while the workers lock them, as a resharding moves
// it. The workers meet ASK redirects while the slot's keys leave, and
// TRYAGAIN on their scripts over a key that left and one that did not.
var slotMove = fault{slotMoveName, (*nemesis).moveSlot}

const slotMoveName = "F25 slot moved during the load"

// memberCrash is F34 on a shard of the cluster member that holds lock
// keys: its master crashes, without a word to anyone, while its replica,
// paused, missed the writes of the last half TTL; the cluster promotes
// the replica, and the crashed master then rejoins empty as the new
// master's replica. The quarantine keeps the promoted replica's votes out
// until MaxTTL after its promotion.
var memberCrash = fault{memberCrashName, (*nemesis).crashMaster}

const memberCrashName = "F36 cluster master crashed, its replica promoted"

// slotWithKeys returns a lock, at random among those whose slot holds
// keys on the cluster member, its slot and the master that serves it; a
// nil master when no slot of the locks holds a key.
func (n *nemesis) slotWithKeys() (string, int, *redistest.Server) {
	member := n.cluster.member
	for _, i := range n.rng.Perm(len(n.memberLocks)) {
		lock := n.memberLocks[i]
		slot := mux.Slot(lock)
		master := member.MasterOf(slot)
		if count := master.Do(n.t, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)); count != "0" {
			return lock, slot, master
		}
	}
	return "", 0, nil
}

// memberLock returns one of the locks whose slots the cluster faults
// pick among, at random.
func (n *nemesis) memberLock() string {
	return n.memberLocks[n.rng.IntN(len(n.memberLocks))]
}

// moveSlot is F25: it marks the slot of a lock importing on another
// master and migrating on its own, waits until the load meets the
// migration (an ASK or TRYAGAIN answered, as the two masters' error
// statistics count; at most three TTLs) and a moment more, moves the
// slot's keys one at a time in a random order with pauses between, and
// ends the migration (CLUSTER SETSLOT NODE). The run fails if the load
// never met it. The slot is one that holds keys when the fault begins (a
// fence counter, a hold): a fenced acquisition commits its counter on a
// quorum only, which may leave the member out.
func (n *nemesis) moveSlot() {
	member := n.cluster.member
	lock, slot, source := n.slotWithKeys()
	if source == nil {
		n.t.Errorf("nemesis: F25: the slots of the locks %v hold no key on the cluster member", n.memberLocks)
		return
	}
	var targets []*redistest.Server
	for _, master := range member.Masters {
		if master != source {
			targets = append(targets, master)
		}
	}
	target := targets[n.rng.IntN(len(targets))]
	what := fmt.Sprintf("%s (slot %d of %s, from %s to %s)", slotMoveName, slot, lock, source.Addr(), target.Addr())
	n.begin(what)
	before := redirects(n, source, target)
	migration := member.StartMigration(slot, target)
	// The load meets the migration as soon as it asks for a key of the
	// slot that the source lacks; a hold of every key of the slot makes
	// it wait until the hold ends.
	met := func() bool {
		now := redirects(n, source, target)
		return now["ASK"]+now["TRYAGAIN"] > before["ASK"]+before["TRYAGAIN"]
	}
	for end := time.Now().Add(3 * n.ttl); !met() && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond) // the servers' counts: nothing to wait on
	}
	time.Sleep(n.uniform(100*time.Millisecond, 400*time.Millisecond))
	keys := strings.Fields(strings.Trim(source.Do(n.t, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), "1000"), "[]"))
	n.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, key := range keys {
		migration.Move(key)
		time.Sleep(n.uniform(50*time.Millisecond, 250*time.Millisecond))
	}
	migration.MoveAll() // any key that came after the listing
	migration.Finish()
	after := redirects(n, source, target)
	asked, retried := after["ASK"]-before["ASK"], after["TRYAGAIN"]-before["TRYAGAIN"]
	if asked+retried == 0 {
		n.t.Errorf("nemesis: the load never met the migration of slot %d of %s: no ASK nor TRYAGAIN answered", slot, lock)
	}
	slices.Sort(keys)
	n.heal(fmt.Sprintf("%s (slot %d of %s, keys moved: %s; the load met ASK ×%d, TRYAGAIN ×%d)", slotMoveName, slot, lock,
		strings.Join(keys, ", "), asked, retried))
	n.t.Logf("nemesis: slot %d moved, keys %s; the load met ASK ×%d, TRYAGAIN ×%d", slot, strings.Join(keys, ", "), asked, retried)
}

// redirects sums the error replies of servers by code, as INFO errorstats
// counts them ("errorstat_ASK:count=12").
func redirects(n *nemesis, servers ...*redistest.Server) map[string]int {
	counts := map[string]int{}
	for _, server := range servers {
		for _, line := range strings.Split(server.Do(n.t, "INFO", "errorstats"), "\n") {
			code, rest, found := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "errorstat_"), ":count=")
			if !found {
				continue
			}
			count, _, _ := strings.Cut(rest, ",")
			value, err := strconv.Atoi(count)
			if err == nil {
				counts[code] += value
			}
		}
	}
	return counts
}

// crashMaster pauses the replica of the master of a lock's slot for half
// a TTL, crashes the master with kill -9, resumes the replica and waits
// for its promotion (redistest.Cluster.Crash), and has the crashed master
// rejoin as the replica (redistest.Cluster.Rejoin). It reports how many
// of the member's votes the in-process clients kept out by quarantine
// meanwhile: the promoted replica is quarantined for MaxTTL from the
// first client's contact, and the rounds that a quorum of plain nodes
// decided first do not judge its vote, so a crash has shown 2 to 37
// and could show none: the count is reported, not required.
func (n *nemesis) crashMaster() {
	member := n.cluster.member
	lock := n.memberLock()
	crashed := member.MasterOf(mux.Slot(lock))
	shard := slices.Index(member.Masters, crashed)
	what := fmt.Sprintf("%s (shard %d of %s: master %s killed, its replica paused for the last %v)", memberCrashName, shard, lock, crashed.Addr(), n.ttl/2)
	quarantined := n.member.quarantined.Load()
	n.begin(what)
	replica := member.Replicas[shard]
	replica.Stop() // it misses what the master takes from now on
	time.Sleep(n.ttl / 2)
	crashed.Kill9()
	replica.Cont()
	promoted := member.Crash(shard) // the master is dead already
	member.Rejoin(shard)
	quarantined = n.member.quarantined.Load() - quarantined
	n.heal(fmt.Sprintf("%s (shard %d: %s promoted, %s rejoined as its replica; %d votes of the member quarantined meanwhile)",
		memberCrashName, shard, promoted.Addr(), crashed.Addr(), quarantined))
	n.t.Logf("nemesis: %s rejoined as the replica of %s; %d votes of the member quarantined meanwhile", crashed.Addr(), promoted.Addr(), quarantined)
}
