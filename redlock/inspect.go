package redlock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockmux/lockmux/mux"
)

// TokenPrefixLength is how many characters of a token Status reports:
// enough to tell holders apart, too few to resume another's hold.
const TokenPrefixLength = 8

// inspectTimeout is how long the nodes have to answer the commands of
// Status; the context bounds how long its caller waits.
const inspectTimeout = 5 * time.Second

// scanBatch is the COUNT hint of each SCAN.
const scanBatch = 500

// LockStatus is what the nodes hold for one key, as Client.Status read it.
type LockStatus struct {
	// Key is the key that was read.
	Key string
	// Nodes holds one entry per node, in the order of Client.Addresses.
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
	// TTL is the key's remaining time to live, when held and Persistent is
	// not set.
	TTL time.Duration
	// Persistent is set when the key exists without a TTL: a lock that
	// never expires, which lockmux never writes (a leak, or a key that is
	// not a lock).
	Persistent bool
	// Fence is the node's fencing counter for the key: the largest fence
	// committed on this node, or 0 when the key was never locked with
	// MutexOptions.Fencing.
	Fence int64
	// Err is why the node's state is unknown, or nil.
	Err error
}

// Status reads key on every node at once: whether the node holds it, the
// prefix of its token and its remaining TTL, and whether a quorum of nodes
// holds the same token. It changes nothing. The error is ErrClosed for a
// closed Client; the failures of single nodes are in their NodeLock.
func (c *Client) Status(ctx context.Context, key string) (LockStatus, error) {
	if c.closed.Load() {
		return LockStatus{}, ErrClosed
	}
	deadline := time.Now().Add(inspectTimeout)
	values, ttls, fences := c.group.NewRound(), c.group.NewRound(), c.group.NewRound()
	values.SetCommand("GET", key)
	ttls.SetCommand("PTTL", key)
	fences.SetCommand("GET", key+fenceKeySuffix)
	for _, round := range []*mux.Round{values, ttls, fences} {
		c.group.Send(round, deadline)
	}
	for _, round := range []*mux.Round{values, ttls, fences} {
		if err := c.group.Wait(ctx, round, nil); err != nil {
			return LockStatus{}, fmt.Errorf("redlock: status %q: %w", key, err)
		}
	}

	status := LockStatus{Key: key, Nodes: make([]NodeLock, len(c.addresses)), Need: c.need}
	tokens := make(map[string]int) // full token → nodes holding it
	full := make([]string, len(c.addresses))
	for i := range status.Nodes {
		node := &status.Nodes[i]
		node.Address = c.addresses[i]
		value, ttl, fence := values.Reply(i), ttls.Reply(i), fences.Reply(i)
		switch {
		case values.Err(i) != nil:
			node.Err = values.Err(i)
			continue
		case ttls.Err(i) != nil:
			node.Err = ttls.Err(i)
			continue
		case value.IsError():
			node.Err = fmt.Errorf("redlock: node %s: GET %q: %w", node.Address, key, value.Err())
			continue
		case ttl.IsError():
			node.Err = fmt.Errorf("redlock: node %s: PTTL %q: %w", node.Address, key, ttl.Err())
			continue
		}
		status.Answered++
		if fences.Err(i) == nil && !fence.IsError() && !fence.Null {
			node.Fence, _ = strconv.ParseInt(string(fence.Str), 10, 64)
		}
		if value.Null || ttl.Int == -2 {
			continue // missing, or expired between the two commands
		}
		token := string(value.Str)
		node.Held = true
		node.TokenPrefix = token[:min(len(token), TokenPrefixLength)]
		if ttl.Int == -1 {
			node.Persistent = true
		} else {
			node.TTL = time.Duration(ttl.Int) * time.Millisecond
		}
		full[i] = token
		tokens[token]++
	}
	for i, token := range full {
		if token != "" && tokens[token] > status.Holders {
			status.Holder, status.Holders = status.Nodes[i].TokenPrefix, tokens[token]
		}
	}
	return status, nil
}

// NodeKeys lists the keys that Client.Scan found on one node.
type NodeKeys struct {
	// Address is the node's address as configured, without its password.
	Address string
	// Keys holds the matching keys in the order SCAN returned them.
	Keys []KeyTTL
	// Err is why the listing is missing or incomplete, or nil.
	Err error
}

// Leaks returns the keys without a TTL, fencing counters excepted.
func (n NodeKeys) Leaks() []KeyTTL {
	var keys []KeyTTL
	for _, key := range n.Keys {
		if key.Persistent && !key.FenceCounter {
			keys = append(keys, key)
		}
	}
	return keys
}

// KeyTTL is one key found by Client.Scan.
type KeyTTL struct {
	// Key is the key's name.
	Key string
	// TTL is the key's remaining time to live, unless Persistent is set.
	TTL time.Duration
	// Persistent is set when the key has no TTL. A lock key always has
	// one, so a persistent key that matches the lock pattern is a leak:
	// written by another tool, or by a SET without PX. Fencing counters
	// are the exception.
	Persistent bool
	// FenceCounter is set for the fencing counter of a resource (see
	// MutexOptions.Fencing): it has no TTL by design, because it must
	// outlive every hold.
	FenceCounter bool
}

// Scan lists, on every node at once, the keys that match the glob-style
// pattern match ("*" when empty) with their remaining TTL, so that keys
// without a TTL (leaks) can be found. A resource's fencing counter, which
// has no TTL by design, is marked as such rather than as a leak. It walks the keyspace with SCAN,
// never KEYS, so it does not block the nodes; as with SCAN, a key written
// or deleted during the walk may be missed. It returns one NodeKeys per
// node, in the order of Client.Addresses, and an error only for a closed
// Client; the failures of single nodes are in their NodeKeys.
func (c *Client) Scan(ctx context.Context, match string) ([]NodeKeys, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if match == "" {
		match = "*"
	}
	results := make([]NodeKeys, c.group.Len())
	var wait sync.WaitGroup
	for i := range results {
		wait.Go(func() {
			results[i] = scanNode(ctx, c.group, i, c.addresses[i], match)
		})
	}
	wait.Wait()
	return results, nil
}

// scanNode walks one node's keyspace.
func scanNode(ctx context.Context, group *mux.Group, node int, address, match string) NodeKeys {
	result := NodeKeys{Address: address}
	var scan mux.Request
	cursor := "0"
	for {
		scan.SetCommand("SCAN", cursor, "MATCH", match, "COUNT", strconv.Itoa(scanBatch))
		next, keys, err := scanStep(ctx, group, node, &scan)
		if err != nil {
			result.Err = fmt.Errorf("redlock: node %s: %w", address, err)
			return result
		}
		if len(keys) > 0 {
			found, err := readTTLs(ctx, group, node, keys)
			result.Keys = append(result.Keys, found...)
			if err != nil {
				result.Err = fmt.Errorf("redlock: node %s: %w", address, err)
				return result
			}
		}
		if next == "0" {
			return result
		}
		cursor = next
	}
}

// scanStep runs one SCAN and returns the next cursor and the keys, copied
// out of the reply.
func scanStep(ctx context.Context, group *mux.Group, node int, request *mux.Request) (string, []string, error) {
	if err := group.Do(ctx, node, request); err != nil {
		return "", nil, err
	}
	if err := request.Err(); err != nil {
		return "", nil, err
	}
	reply := request.Reply()
	if reply.IsError() {
		return "", nil, fmt.Errorf("SCAN: %w", reply.Err())
	}
	if len(reply.Elems) != 2 {
		return "", nil, fmt.Errorf("SCAN: unexpected reply %v", reply)
	}
	keys := make([]string, len(reply.Elems[1].Elems))
	for i, key := range reply.Elems[1].Elems {
		keys[i] = string(key.Str)
	}
	return string(reply.Elems[0].Str), keys, nil
}

// readTTLs sends PTTL for every key in one pipeline and returns the keys
// that still exist with their TTLs.
func readTTLs(ctx context.Context, group *mux.Group, node int, keys []string) ([]KeyTTL, error) {
	requests := make([]*mux.Request, len(keys))
	for i, key := range keys {
		requests[i] = mux.NewRequest("PTTL", key)
	}
	if err := group.Do(ctx, node, requests...); err != nil {
		return nil, err
	}
	found := make([]KeyTTL, 0, len(keys))
	for i, key := range keys {
		reply := requests[i].Reply()
		switch {
		case reply.IsError():
			return found, fmt.Errorf("PTTL %q: %w", key, reply.Err())
		case reply.Int == -2:
			// deleted or expired since SCAN returned it
		case reply.Int == -1:
			found = append(found, KeyTTL{Key: key, Persistent: true, FenceCounter: strings.HasSuffix(key, fenceKeySuffix)})
		default:
			found = append(found, KeyTTL{Key: key, TTL: time.Duration(reply.Int) * time.Millisecond})
		}
	}
	return found, nil
}
