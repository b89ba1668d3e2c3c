//go:build linux

package safety_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/faultnet"
	"github.com/lockmux/lockmux/internal/safety"
)

// nemesis injects the faults of a run, one at a time, from the test's
// goroutine, and records each in the history. Its random choices come from
// the run's seed, so a seed replays the schedule (not the interleavings).
type nemesis struct {
	t       *testing.T
	rng     *rand.Rand
	cluster *cluster
	links   [][]*faultnet.Proxy // per client, per node
	rec     *safety.Recorder
	ttl     time.Duration
	faults  int            // faults injected
	counts  map[string]int // faults injected, by name
	// memberLocks are the names of the workers' locks, whose slots the
	// faults of the cluster member pick among; member observes what the
	// in-process clients saw of the cluster member.
	memberLocks []string
	member      *memberObserver
}

// fault is one kind of fault of the fault matrix (RELIABILITY.md §6).
type fault struct {
	name   string
	inject func(n *nemesis)
}

// mustSurvive are the faults of phase A: each heals before it returns, and
// none touches more than two nodes.
var mustSurvive = []fault{
	{"F1 kill -9, restart at once with AOF", (*nemesis).killRestart},
	{"F3 kill -9, restart empty after the TTL", (*nemesis).restartEmpty},
	{"F6 SIGSTOP the server", (*nemesis).stopServer},
	{"F7 CLIENT PAUSE WRITE", (*nemesis).pauseWrites},
	{"F10 latency", (*nemesis).latency},
	{"F11 blackhole", (*nemesis).blackhole},
	{"F12 drop replies", (*nemesis).dropReplies},
	{"F13 reset mid-frame", (*nemesis).resetMidFrame},
	{"F14 per-client minority partition", (*nemesis).partition},
	{"F20 OOM", (*nemesis).outOfMemory},
	{"F22 LOADING", (*nemesis).loading},
	{"F23 BUSY", (*nemesis).busy},
	scriptFlush,
	{"F28 active expiry off", (*nemesis).activeExpiryOff},
}

// restartAtOnceEmpty is F2, which phase A survives only with
// redlock.Options.Quarantine: a node killed and restarted at once without
// its data (phase C's restart canary shows what it does without).
var restartAtOnceEmpty = fault{restartAtOnceEmptyName, (*nemesis).restartAtOnceEmpty}

const restartAtOnceEmptyName = "F2 kill -9, restart at once with no data"

// failover is F34, which phase A survives only with
// redlock.Options.Quarantine: the last node's master is killed while its
// replica, paused, missed the locks taken since, and the replica is
// promoted behind the same address.
var failover = fault{failoverName, (*nemesis).failover}

const failoverName = "F34 failover to a replica that missed writes"

// flush is F35, which phase A survives only with
// redlock.Options.Quarantine: a node flushed while it stays up loses the
// keys of live holds and its marker, and its votes must not count until
// the quarantine ends, whichever connection first learns of the flush.
var flush = fault{flushName, (*nemesis).flush}

const flushName = "F35 FLUSHALL of a node that stays up"

// scriptFlush is F24: EVALSHA then answers NOSCRIPT, and the library
// sends the script again in the same round.
var scriptFlush = fault{"F24 SCRIPT FLUSH", (*nemesis).scriptFlush}

// smokeFaults are the cheaper faults of the smoke run.
var smokeFaults = []fault{mustSurvive[0], mustSurvive[2], mustSurvive[4], mustSurvive[5], mustSurvive[6],
	mustSurvive[7], mustSurvive[8], mustSurvive[12]}

func (n *nemesis) nodeName(i int) string { return nodeNames[i] }

// begin records the start of a fault on nodes. The fault's name is what
// up to its first " (", which starts the details (safety.FaultName).
func (n *nemesis) begin(what string, nodes ...int) {
	n.faults++
	n.counts[safety.FaultName(what)]++
	var names []string
	for _, i := range nodes {
		names = append(names, n.nodeName(i))
	}
	n.rec.Record(safety.Event{Kind: safety.KindNemesis, What: what, Node: strings.Join(names, ",")})
	if len(names) > 0 {
		what += " on " + strings.Join(names, ",")
	}
	n.t.Logf("nemesis: %s", what)
}

// heal records the end of a fault.
func (n *nemesis) heal(what string, nodes ...int) {
	var names []string
	for _, i := range nodes {
		names = append(names, n.nodeName(i))
	}
	n.rec.Record(safety.Event{Kind: safety.KindHeal, What: what, Node: strings.Join(names, ",")})
}

// uniform returns a duration drawn uniformly from [low, high].
func (n *nemesis) uniform(low, high time.Duration) time.Duration {
	return low + time.Duration(n.rng.Int64N(int64(high-low)+1))
}

// pick returns k distinct random nodes.
func (n *nemesis) pick(k int) []int {
	return n.rng.Perm(len(n.cluster.nodes))[:k]
}

// command sends a command to node i and fails the test on a transport
// error or an error reply, unless the reply starts with allowed.
func (n *nemesis) command(i int, allowed string, args ...string) {
	n.t.Helper()
	reply, err := safety.Command(context.Background(), n.cluster.nodes[i].Addr(), args...)
	switch {
	case err != nil:
		n.t.Errorf("nemesis: %s %v: %v", n.nodeName(i), args, err)
	case reply.IsError() && (allowed == "" || !strings.HasPrefix(string(reply.Str), allowed)):
		n.t.Errorf("nemesis: %s %v: %s", n.nodeName(i), args, reply.Str)
	}
}

// eachLink applies f to the link of every client to each of nodes.
func (n *nemesis) eachLink(nodes []int, f func(*faultnet.Proxy)) {
	for _, client := range n.links {
		for _, i := range nodes {
			f(client[i])
		}
	}
}

func (n *nemesis) killRestart() {
	i := n.pick(1)[0]
	// The node loads every command it logged since the last rewrite at the
	// delay per command that F22 needs, and the writes of a long run alone
	// can outlast the restart's wait: rewrite first, so that the restart
	// loads the keys, not the log. What the node holds is the same.
	n.rewriteAOF(i)
	what := "F1 kill -9, restart at once with AOF"
	n.begin(what, i)
	n.cluster.nodes[i].Kill9()
	time.Sleep(300 * time.Millisecond)
	n.cluster.nodes[i].Restart(n.t)
	n.heal(what, i)
}

func (n *nemesis) restartAtOnceEmpty() {
	i := n.pick(1)[0]
	what := restartAtOnceEmptyName
	n.begin(what, i)
	n.cluster.nodes[i].Kill9()
	n.cluster.nodes[i].Wipe()
	n.rec.Record(safety.Event{Kind: safety.KindWipe, What: what, Node: n.nodeName(i)})
	n.cluster.nodes[i].Restart(n.t)
	n.heal(what, i)
}

func (n *nemesis) flush() {
	i := n.pick(1)[0]
	what := flushName
	n.begin(what, i)
	n.command(i, "", "FLUSHALL")
	n.rec.Record(safety.Event{Kind: safety.KindWipe, What: what, Node: n.nodeName(i)})
	n.heal(what, i)
}

// failover promotes the replica of the last node after its master died,
// the replica having missed the writes of the last half TTL, and points
// every client's link to that node at it, as a failover behind a virtual
// IP does: the clients see a server that lost keys, under the node's
// address. The old master comes back empty as the new one's replica, so
// that the next failover swaps them back.
func (n *nemesis) failover() {
	c := n.cluster
	i := len(c.nodes) - 1
	master, replica := c.nodes[i], c.replica
	// The replica follows its master before it is made to miss writes: a
	// fault just before (F1, F22 restart the master) may have it loading
	// a full resynchronisation still, and a loading server cannot be
	// promoted.
	c.awaitReplica()
	what := failoverName
	n.begin(what, i)
	replica.Stop() // it misses what the master takes from now on
	time.Sleep(n.ttl / 2)
	master.Kill9()
	replica.Cont()
	replica.Promote(n.t)
	n.rec.Record(safety.Event{Kind: safety.KindWipe, What: what, Node: n.nodeName(i)})
	c.nodes[i], c.replica = replica, master
	c.retarget(i, replica.Addr())
	c.clocks[i], c.replicaClock = c.replicaClock, c.clocks[i]
	master.Wipe()
	master.Restart(n.t)
	master.Follow(n.t, replica)
	c.awaitReplica()
	n.heal(what, i)
}

func (n *nemesis) restartEmpty() {
	i := n.pick(1)[0]
	what := "F3 kill -9, restart empty after the TTL"
	n.begin(what, i)
	n.cluster.nodes[i].Kill9()
	// Longer than any key of the node can live: the TTL, its drift
	// allowance and a margin.
	time.Sleep(n.ttl + n.ttl/100 + 300*time.Millisecond)
	n.cluster.nodes[i].Wipe()
	n.rec.Record(safety.Event{Kind: safety.KindWipe, What: what, Node: n.nodeName(i)})
	n.cluster.nodes[i].Restart(n.t)
	n.heal(what, i)
}

func (n *nemesis) stopServer() {
	i := n.pick(1)[0]
	what := "F6 SIGSTOP the server"
	n.begin(what, i)
	n.cluster.nodes[i].Stop()
	time.Sleep(n.uniform(300*time.Millisecond, 1500*time.Millisecond))
	n.cluster.nodes[i].Cont()
	n.heal(what, i)
}

func (n *nemesis) pauseWrites() {
	i := n.pick(1)[0]
	what := "F7 CLIENT PAUSE WRITE"
	n.begin(what, i)
	n.command(i, "", "CLIENT", "PAUSE", "800", "WRITE")
	time.Sleep(time.Second)
	n.heal(what, i)
}

func (n *nemesis) latency() {
	nodes := n.pick(1 + n.rng.IntN(2))
	delay := n.uniform(20*time.Millisecond, 200*time.Millisecond)
	what := fmt.Sprintf("F10 latency (%v)", delay)
	n.begin(what, nodes...)
	n.eachLink(nodes, func(p *faultnet.Proxy) { p.Delay(delay/2, delay/2) })
	time.Sleep(2 * time.Second)
	n.eachLink(nodes, (*faultnet.Proxy).Pass)
	n.heal(what, nodes...)
}

func (n *nemesis) blackhole() {
	nodes := n.pick(1 + n.rng.IntN(2))
	what := "F11 blackhole"
	n.begin(what, nodes...)
	n.eachLink(nodes, (*faultnet.Proxy).Blackhole)
	time.Sleep(2 * time.Second)
	n.eachLink(nodes, (*faultnet.Proxy).Heal)
	n.heal(what, nodes...)
}

func (n *nemesis) dropReplies() {
	nodes := n.pick(1)
	what := "F12 drop replies"
	n.begin(what, nodes...)
	n.eachLink(nodes, func(p *faultnet.Proxy) { p.DropReplies(1 << 20) })
	time.Sleep(time.Second)
	n.eachLink(nodes, func(p *faultnet.Proxy) { p.DropReplies(0) })
	n.heal(what, nodes...)
}

func (n *nemesis) resetMidFrame() {
	nodes := n.pick(1)
	what := "F13 reset mid-frame"
	n.begin(what, nodes...)
	n.eachLink(nodes, func(p *faultnet.Proxy) { p.ResetAfter(n.rng.IntN(40)) })
	time.Sleep(time.Second)
	n.eachLink(nodes, (*faultnet.Proxy).Pass)
	n.heal(what, nodes...)
}

func (n *nemesis) partition() {
	var cuts [][]int
	var described []string
	for client := range n.links {
		cut := n.pick(1 + n.rng.IntN(2))
		cuts = append(cuts, cut)
		var names []string
		for _, i := range cut {
			names = append(names, n.nodeName(i))
		}
		described = append(described, fmt.Sprintf("client %d: %s", client+1, strings.Join(names, ",")))
	}
	what := "F14 per-client minority partition (" + strings.Join(described, "; ") + ")"
	n.begin(what)
	for client, cut := range cuts {
		for _, i := range cut {
			n.links[client][i].Partition()
		}
	}
	time.Sleep(2 * time.Second)
	for client, cut := range cuts {
		for _, i := range cut {
			n.links[client][i].Heal()
		}
	}
	n.heal(what)
}

func (n *nemesis) outOfMemory() {
	i := n.pick(1)[0]
	what := "F20 OOM"
	n.begin(what, i)
	n.command(i, "", "CONFIG", "SET", "maxmemory", "1")
	time.Sleep(2 * time.Second)
	n.command(i, "", "CONFIG", "SET", "maxmemory", "0")
	n.heal(what, i)
}

// fillerKeys is the number of keys F22 adds; at --key-load-delay 1000 µs
// per key, loading them takes about two seconds.
const fillerKeys = 2000

func (n *nemesis) loading() {
	i := n.pick(1)[0]
	what := "F22 LOADING"
	n.begin(what, i)
	count := fmt.Sprint(fillerKeys)
	// Rewrite the AOF first: the node loads every command it logged since
	// the last rewrite at the same delay per command, and the writes of a
	// long run alone can outlast the restart's wait.
	n.rewriteAOF(i)
	n.command(i, "", "EVAL", "for i = 1, tonumber(ARGV[1]) do redis.call('SET', 'filler:' .. i, 'x') end", "0", count)
	n.cluster.nodes[i].Kill9()
	n.cluster.nodes[i].Restart(n.t) // returns once loading is over
	n.command(i, "", "EVAL", "for i = 1, tonumber(ARGV[1]) do redis.call('DEL', 'filler:' .. i) end", "0", count)
	// Rewrite the AOF so that later restarts do not load the fillers again.
	n.rewriteAOF(i)
	n.heal(what, i)
}

// rewriteAOF rewrites node i's append-only file and waits, a bounded
// time, until the rewrite is over.
func (n *nemesis) rewriteAOF(i int) {
	n.command(i, "ERR Background append only file rewriting already in progress", "BGREWRITEAOF")
	for range 500 {
		reply, err := safety.Command(context.Background(), n.cluster.nodes[i].Addr(), "INFO", "persistence")
		if err == nil && strings.Contains(string(reply.Str), "aof_rewrite_in_progress:0") &&
			strings.Contains(string(reply.Str), "aof_rewrite_scheduled:0") {
			return
		}
		time.Sleep(10 * time.Millisecond) // polling a server's state, bounded
	}
}

func (n *nemesis) busy() {
	i := n.pick(1)[0]
	what := "F23 BUSY"
	n.begin(what, i)
	n.command(i, "", "CONFIG", "SET", "busy-reply-threshold", "100")
	var wait sync.WaitGroup
	wait.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Answers an error once SCRIPT KILL stops it.
		_, _ = safety.Command(ctx, n.cluster.nodes[i].Addr(), "EVAL", "while true do end", "0")
	})
	time.Sleep(time.Second)
	for range 50 {
		reply, err := safety.Command(context.Background(), n.cluster.nodes[i].Addr(), "SCRIPT", "KILL")
		if err == nil && !reply.IsError() {
			break
		}
		time.Sleep(20 * time.Millisecond) // NOTBUSY: the script has not started yet
	}
	wait.Wait()
	n.command(i, "", "CONFIG", "SET", "busy-reply-threshold", "5000")
	n.heal(what, i)
}

func (n *nemesis) scriptFlush() {
	i := n.pick(1)[0]
	what := "F24 SCRIPT FLUSH"
	n.begin(what, i)
	n.command(i, "", "SCRIPT", "FLUSH")
	time.Sleep(500 * time.Millisecond)
	n.heal(what, i)
}

func (n *nemesis) activeExpiryOff() {
	i := n.pick(1)[0]
	what := "F28 active expiry off"
	n.begin(what, i)
	n.command(i, "", "DEBUG", "SET-ACTIVE-EXPIRE", "0")
	time.Sleep(3 * time.Second)
	n.command(i, "", "DEBUG", "SET-ACTIVE-EXPIRE", "1")
	n.heal(what, i)
}

// mustSurvivePhase injects the faults of first, in order, then faults
// from list, in a seeded order that goes through the whole list before
// repeating, with a short gap after each, until duration has passed.
func (n *nemesis) mustSurvivePhase(first, list []fault, duration time.Duration) {
	end := time.Now().Add(duration)
	order := n.rng.Perm(len(list))
	for k := 0; time.Now().Before(end) && !n.t.Failed(); k++ {
		if k < len(first) {
			first[k].inject(n)
		} else {
			list[order[(k-len(first))%len(order)]].inject(n)
		}
		time.Sleep(n.uniform(500*time.Millisecond, time.Second))
	}
}

// pauseResult is what pausePhase did.
type pauseResult struct {
	pauses   int
	longest  time.Duration
	shortest time.Duration
}

// pausePhase stops worker processes with SIGSTOP inside their critical
// section, before their write, for U(1.2, 2.5)·TTL and, if needed, until
// another holder has written with a newer fence (at most 4 TTLs more):
// the resumed holder then makes a stale write that fencing must refuse
// (F8, phase B). It goes on until duration has passed.
func (n *nemesis) pausePhase(processes []*workerProcess, tr *tracker, duration time.Duration) pauseResult {
	result := pauseResult{shortest: time.Hour}
	end := time.Now().Add(duration)
	for time.Now().Before(end) && !n.t.Failed() {
		p := processes[n.rng.IntN(len(processes))]
		var target safety.Event
		found := false
		for wait := time.Now().Add(2 * time.Second); time.Now().Before(wait); time.Sleep(time.Millisecond) {
			if target, found = tr.insideUnwritten(p.name); found {
				break
			}
		}
		if !found {
			continue
		}
		what := "pause"
		n.faults++
		n.counts["F8 SIGSTOP a client in its critical section"]++
		n.rec.Record(safety.Event{Kind: safety.KindNemesis, What: what, Worker: p.name, Hold: target.Hold, Key: target.Key})
		start := time.Now()
		if err := p.signal(syscall.SIGSTOP); err != nil {
			n.t.Errorf("nemesis: %v", err)
			return result
		}
		minimum := time.Duration(float64(n.ttl) * (1.2 + 1.3*n.rng.Float64()))
		time.Sleep(minimum)
		fence := tr.fences[target.Hold]
		for limit := time.Now().Add(4 * n.ttl); time.Now().Before(limit); time.Sleep(5 * time.Millisecond) {
			tr.update()
			if tr.newest[target.Key] > fence {
				break
			}
		}
		if err := p.signal(syscall.SIGCONT); err != nil {
			n.t.Errorf("nemesis: %v", err)
			return result
		}
		paused := time.Since(start)
		n.rec.Record(safety.Event{Kind: safety.KindHeal, What: what, Worker: p.name, Hold: target.Hold, Key: target.Key})
		n.t.Logf("nemesis: paused %s for %v inside %s (fence %d)", p.name, paused.Round(time.Millisecond), target.Hold, fence)
		result.pauses++
		result.longest, result.shortest = max(result.longest, paused), min(result.shortest, paused)
		time.Sleep(n.uniform(300*time.Millisecond, 800*time.Millisecond))
	}
	return result
}
