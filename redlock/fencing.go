package redlock

import (
	"context"

	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// The scripts of fencing.
var (
	acquireFencedLua = newScript(acquireFencedScript)
	commitFenceLua   = newScript(commitFenceScript)
)

// fenceKeySuffix ends the key of a resource's fencing counter, which
// follows the Mutex's key. The counter has no TTL: it must outlive every
// hold, and survive restarts (appendfsync always). The name is defined in
// naming, which the tools that read the counters share.
const fenceKeySuffix = naming.FenceKeySuffix

// Fence returns the hold's fencing token, or 0 when the Mutex is not held
// or MutexOptions.Fencing is off. Fences of one resource strictly increase
// from hold to hold, across clients and processes, as long as the nodes
// keep their data (see the package documentation, # Safety). Pass it to
// the resource with every write, and have the resource refuse a fence
// older than the newest it has seen (package fencedstore does that for a
// Redis key).
func (m *Mutex) Fence() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held {
		return 0
	}
	return m.fence
}

// buildFencedAcquire writes the first round of a fenced acquisition: every
// lock key set, and the counter read, by one script.
func (m *Mutex) buildFencedAcquire() {
	m.round.SetScript(acquireFencedLua, len(m.keys)+1, 2)
	m.appendKeys(m.round)
	m.round.AppendString(m.fenceKey)
	m.round.AppendBulk(m.tokenBytes[:m.tokenSize])
	m.round.AppendInt(m.ttl)
}

// commitFence runs the second round of a fenced acquisition: the fence is
// one more than the largest counter the nodes that said OK returned, and
// it is written back to those nodes if they still hold the lock. Any later
// acquisition's quorum shares a node with the quorum that confirms this
// commit, reads a counter at least this fence there, and gets a larger
// one. It returns the fence and whether a quorum confirmed it.
func (m *Mutex) commitFence(ctx context.Context) (int64, bool) {
	var fence int64
	for _, node := range m.tally.nodes {
		if node.outcome == OutcomeAcquired && node.number > fence {
			fence = node.number
		}
	}
	fence++
	m.round.SetScript(commitFenceLua, len(m.keys)+1, 2)
	m.appendKeys(m.round)
	m.round.AppendString(m.fenceKey)
	m.round.AppendBulk(m.tokenBytes[:m.tokenSize])
	m.round.AppendInt(fence)
	for i := range m.tally.nodes {
		if m.tally.nodes[i].outcome != OutcomeAcquired {
			m.round.Skip(i) // it holds nothing of ours: not sent
		}
	}
	m.commitTally.reset(OperationLock, m.client.need)
	m.commitTally.commit = true
	m.client.group.Send(m.round, m.roundDeadline())
	if m.client.group.Wait(ctx, m.round, &m.commitTally) != nil {
		return fence, false
	}
	return fence, m.commitTally.got >= m.client.need
}
