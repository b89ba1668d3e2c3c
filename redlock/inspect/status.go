package inspect

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/resp"
)

// clusterEpochAge returns the age of the youngest epoch marker of the
// masters of node, a Redis Cluster (each keeps its own), or -1 when one of
// them has none of its server process or does not answer.
func clusterEpochAge(ctx context.Context, group *mux.Group, node int) time.Duration {
	requests, err := quarantine.AskMasters(ctx, group, node, quarantine.AgeScript)
	if err != nil {
		return -1
	}
	youngest, ok := quarantine.Youngest(requests)
	if !ok {
		return -1
	}
	return time.Duration(youngest.Reply().Int) * time.Millisecond
}

// liveWaitersScript counts the waiters in a fair lock's line whose
// heartbeats are live by the node's clock.
const liveWaitersScript = `local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = 0
for _, waiter in ipairs(redis.call("ZRANGE", KEYS[1], 0, -1)) do
  local expiry = redis.call("ZSCORE", KEYS[2], waiter)
  if expiry and tonumber(expiry) > now then
    live = live + 1
  end
end
return live`

// TokenPrefixLength is how many characters of a token Status reports:
// enough to tell holders apart, too few to resume another's hold.
const TokenPrefixLength = 8

// LockStatus is what the nodes hold for one key, as Inspector.Status read
// it.
type LockStatus struct {
	// Key is the key that was read.
	Key string
	// Nodes holds one entry per node, in the order of the addresses given
	// to New.
	Nodes []NodeLock
	// Need is the quorum: the number of nodes that must hold one token
	// for the key to be locked.
	Need int
	// Answered is the number of nodes that answered.
	Answered int
	// Holder is the prefix of the token that the most nodes hold, or ""
	// when no node holds the key; Holders is the number of those nodes.
	Holder  string
	Holders int
	// Metadata is the redlock.MutexOptions.Metadata of the hold that the
	// most nodes hold, or "".
	Metadata string
	// Waiting is, for a fair lock (redlock.MutexOptions.Fair), the most
	// waiters in line on a node, by their heartbeats; 0 for another lock.
	Waiting int
}

// Locked reports whether a quorum of nodes holds one token for the key:
// somebody holds the lock.
func (s LockStatus) Locked() bool {
	return s.Holders >= s.Need
}

// NodeLock is one node's part of a LockStatus.
type NodeLock struct {
	// Address is the node's address as configured, without its password.
	Address string
	// Held is set when the node has the key.
	Held bool
	// TokenPrefix is the first TokenPrefixLength characters of the key's
	// value, when held.
	TokenPrefix string
	// Metadata is the redlock.MutexOptions.Metadata stored with the
	// token, when held: what follows the first space of the key's value.
	Metadata string
	// Waiting is the number of a fair lock's waiters in line on the node
	// whose heartbeats are live.
	Waiting int
	// EpochAge is the age of the node's epoch marker by its clock, for
	// redlock.Options.Quarantine: a client that quarantines keeps the node
	// out of the locks while it is younger than its MaxTTL. It is −1 when
	// the marker is missing or was written by another server process (the
	// node is quarantined for a whole MaxTTL when such a client connects)
	// or could not be read.
	EpochAge time.Duration
	// TTL is the key's remaining time to live, when held and Persistent is
	// not set.
	TTL time.Duration
	// Persistent is set when the key exists without a TTL: a lock that
	// never expires, which lockmux never writes (a leak, or a key that is
	// not a lock).
	Persistent bool
	// Fence is the node's fencing counter for the key: the largest fence
	// committed on this node, or 0 when the key was never locked with
	// redlock.MutexOptions.Fencing.
	Fence int64
	// Err is why the node's state is unknown, or nil.
	Err error
}

// Status reads key on every node at once: whether the node holds it, the
// prefix of its token, its remaining TTL and the resource's fencing
// counter, and whether a quorum of nodes holds the same token. It changes
// nothing. The error is ErrClosed after Close, or the context's when it
// ended first; the failures of single nodes are in their NodeLock.
func (i *Inspector) Status(ctx context.Context, key string) (LockStatus, error) {
	if i.closed.Load() {
		return LockStatus{}, ErrClosed
	}
	deadline := time.Now().Add(timeout)
	values, ttls, fences, line, markers := i.group.NewRound(), i.group.NewRound(), i.group.NewRound(), i.group.NewRound(), i.group.NewRound()
	values.SetCommand("GET", key)
	ttls.SetCommand("PTTL", key)
	fences.SetCommand("GET", key+naming.FenceKeySuffix)
	line.SetCommand("EVAL", liveWaitersScript, "2", key+naming.QueueKeySuffix, key+naming.AliveKeySuffix)
	markers.SetCommand("EVAL", quarantine.AgeScript, "1", naming.EpochKey)
	for n := range i.group.Len() {
		if i.group.IsCluster(n) {
			markers.Skip(n) // its masters' markers are read one by one (clusterEpochAge)
		}
	}
	rounds := []*mux.Round{values, ttls, fences, line, markers}
	for _, round := range rounds {
		i.group.Send(round, deadline)
	}
	for r, round := range rounds {
		if err := i.group.Wait(ctx, round, nil); err != nil {
			for _, rest := range rounds[r+1:] {
				i.group.Discard(rest) // nobody waits for them any more
			}
			return LockStatus{}, fmt.Errorf("inspect: status %q: %w", key, err)
		}
	}

	status := LockStatus{Key: key, Nodes: make([]NodeLock, len(i.addresses)), Need: i.need}
	tokens := make(map[string]int) // full token → nodes holding it
	full := make([]string, len(i.addresses))
	for n := range status.Nodes {
		node := &status.Nodes[n]
		node.Address = i.addresses[n]
		value, ttl, fence := values.Reply(n), ttls.Reply(n), fences.Reply(n)
		switch {
		case values.Err(n) != nil:
			node.Err = values.Err(n)
			continue
		case ttls.Err(n) != nil:
			node.Err = ttls.Err(n)
			continue
		case value.IsError():
			node.Err = fmt.Errorf("inspect: node %s: GET %q: %w", node.Address, key, value.Err())
			continue
		case ttl.IsError():
			node.Err = fmt.Errorf("inspect: node %s: PTTL %q: %w", node.Address, key, ttl.Err())
			continue
		}
		status.Answered++
		if fences.Err(n) == nil && !fence.IsError() && !fence.Null {
			node.Fence, _ = strconv.ParseInt(string(fence.Str), 10, 64)
		}
		node.EpochAge = -1
		if i.group.IsCluster(n) {
			node.EpochAge = clusterEpochAge(ctx, i.group, n)
		} else if age := markers.Reply(n); markers.Err(n) == nil && age.Type == resp.TypeInteger && age.Int >= 0 {
			node.EpochAge = time.Duration(age.Int) * time.Millisecond
		}
		if waiting := line.Reply(n); line.Err(n) == nil && waiting.Type == resp.TypeInteger {
			node.Waiting = int(waiting.Int)
			status.Waiting = max(status.Waiting, node.Waiting)
		}
		if value.Null || ttl.Int == -2 {
			continue // missing, or expired between the two commands
		}
		token := string(value.Str)
		node.Held = true
		holder, metadata, _ := strings.Cut(token, " ") // a token holds no space (see redlock.MutexOptions.Metadata)
		node.TokenPrefix, node.Metadata = holder[:min(len(holder), TokenPrefixLength)], metadata
		if ttl.Int == -1 {
			node.Persistent = true
		} else {
			node.TTL = time.Duration(ttl.Int) * time.Millisecond
		}
		full[n] = token
		tokens[token]++
	}
	for n, token := range full {
		if token != "" && tokens[token] > status.Holders {
			status.Holder, status.Holders, status.Metadata = status.Nodes[n].TokenPrefix, tokens[token], status.Nodes[n].Metadata
		}
	}
	return status, nil
}
