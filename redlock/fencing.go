package redlock

import (
	"context"
	"math"

	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// The scripts of fencing.
var (
	acquireFencedLua = newScript(acquireFencedScript)
	commitFenceLua   = newScript(commitFenceScript)
)

// fenceKeySuffix ends the key of a lock key's fencing counter, which
// follows the lock key. The counter has no TTL: it must outlive every
// hold, and survive restarts (appendfsync always). The name is defined in
// naming, which the tools that read the counters share.
const fenceKeySuffix = naming.FenceKeySuffix

// Fence returns the hold's fencing token, or 0 when the Mutex is not held
// or MutexOptions.Fencing is off. Fences of one resource strictly increase
// from hold to hold, across clients and processes, whatever set of keys
// locked it, as long as the nodes keep their data (see the package
// documentation, # Safety). Pass it to the resource with every write, and
// have the resource refuse a fence older than the newest it has seen
// (package fencedstore does that for a Redis key).
func (m *Mutex) Fence() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held {
		return 0
	}
	return m.fence
}

// fenceKeys returns the keys of the fencing counters of keys, in their
// order.
func fenceKeys(keys []string) []string {
	counters := make([]string, len(keys))
	for i, key := range keys {
		counters[i] = key + fenceKeySuffix
	}
	return counters
}

// appendFencedKeys appends the Mutex's lock keys, then their counters'
// keys, to the round's command.
func (m *Mutex) appendFencedKeys() {
	m.appendKeys(m.round)
	for _, key := range m.fenceKeys {
		m.round.AppendString(key)
	}
}

// buildFencedAcquire writes the first round of a fenced acquisition: every
// lock key set, and the largest of their counters read, by one script.
func (m *Mutex) buildFencedAcquire() {
	m.round.SetScript(acquireFencedLua, 2*len(m.keys), 2)
	m.appendFencedKeys()
	m.round.AppendBulk(m.tokenBytes[:m.tokenSize])
	m.round.AppendInt(m.ttl)
}

// commitFence runs the second round of a fenced acquisition: the fence is
// one more than the largest counter of any lock key that the nodes that
// said OK returned, and it is written back to every lock key's counter on
// those nodes if they still hold the lock. Any later acquisition of one of
// these keys, alone or with others, has a quorum that shares a node with
// the quorum that confirms this commit, reads that key's counter there, at
// least this fence, and gets a larger one. It returns the fence and
// whether a quorum confirmed it.
func (m *Mutex) commitFence(ctx context.Context) (int64, bool) {
	var fence int64
	for _, node := range m.tally.nodes {
		if node.outcome == OutcomeAcquired && node.number > fence {
			fence = node.number
		}
	}
	fence++ // parseCounter admits no counter without a next fence
	m.round.SetScript(commitFenceLua, 2*len(m.keys), 2)
	m.appendFencedKeys()
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

// parseCounter parses a fencing counter as acquireFencedScript returns it:
// a decimal integer without sign or leading zeros, from 0 to
// math.MaxInt64−1, so that the next fence fits an int64. It does not
// allocate.
func parseCounter(text []byte) (int64, bool) {
	if len(text) == 0 || len(text) > 19 || (text[0] == '0' && len(text) > 1) {
		return 0, false
	}
	var n uint64
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0') // 19 digits fit a uint64
	}
	if n >= math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}
