package inspect

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// scanBatch is the COUNT hint of each SCAN.
const scanBatch = 500

// NodeKeys lists the keys that Inspector.Scan found on one node.
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

// KeyTTL is one key found by Inspector.Scan.
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
	// FenceCounter is set for the fencing counter of a resource (the key
	// followed by ":lockmux-fence", see redlock.MutexOptions.Fencing): it
	// has no TTL by design, because it must outlive every hold.
	FenceCounter bool
}

// Scan lists, on every node at once, the keys that match the glob-style
// pattern match ("*" when empty) with their remaining TTL, so that keys
// without a TTL (leaks) can be found. A resource's fencing counter, which
// has no TTL by design, is marked as such rather than as a leak. It walks
// the keyspace with SCAN, never KEYS, so it does not block the nodes; as
// with SCAN, a key written or deleted during the walk may be missed. It
// returns one NodeKeys per node, in the order of the addresses given to
// New, and an error only after Close (ErrClosed); the failures of single
// nodes, a context that ended among them, are in their NodeKeys.
func (i *Inspector) Scan(ctx context.Context, match string) ([]NodeKeys, error) {
	if i.closed.Load() {
		return nil, ErrClosed
	}
	if match == "" {
		match = "*"
	}
	results := make([]NodeKeys, i.group.Len())
	var wait sync.WaitGroup
	for node := range results {
		wait.Go(func() {
			results[node] = scanNode(ctx, i.group, node, i.addresses[node], match)
		})
	}
	wait.Wait()
	return results, nil
}

// scanNode walks one node's keyspace: each master's, for a Redis Cluster
// node.
func scanNode(ctx context.Context, group *mux.Group, node int, address, match string) NodeKeys {
	result := NodeKeys{Address: address}
	tags, err := group.MasterTags(ctx, node)
	if err != nil {
		result.Err = fmt.Errorf("inspect: node %s: %w", address, err)
		return result
	}
	if tags == nil {
		tags = []string{""} // one server: the command's own routing
	}
	for _, tag := range tags {
		var scan mux.Request
		if tag != "" {
			scan.RouteAs("{" + tag + "}")
		}
		if !scanServer(ctx, group, node, &scan, match, &result) {
			return result
		}
	}
	return result
}

// scanServer walks the keyspace of the server that scan reaches, adding
// what it finds to result; it reports false when it failed, with the
// error in result.
func scanServer(ctx context.Context, group *mux.Group, node int, scan *mux.Request, match string, result *NodeKeys) bool {
	address := result.Address
	cursor := "0"
	for {
		scan.SetCommand("SCAN", cursor, "MATCH", match, "COUNT", strconv.Itoa(scanBatch))
		next, keys, err := scanStep(ctx, group, node, scan)
		if err != nil {
			result.Err = fmt.Errorf("inspect: node %s: %w", address, err)
			return false
		}
		if len(keys) > 0 {
			found, err := readTTLs(ctx, group, node, keys)
			result.Keys = append(result.Keys, found...)
			if err != nil {
				result.Err = fmt.Errorf("inspect: node %s: %w", address, err)
				return false
			}
		}
		if next == "0" {
			return true
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
			found = append(found, KeyTTL{Key: key, Persistent: true, FenceCounter: strings.HasSuffix(key, naming.FenceKeySuffix)})
		default:
			found = append(found, KeyTTL{Key: key, TTL: time.Duration(reply.Int) * time.Millisecond})
		}
	}
	return found, nil
}
