package inspect

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// liveReadersScript returns the members of a read/write lock's readers'
// sorted set whose expiry, by the node's clock, is still ahead.
const liveReadersScript = `local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call("ZRANGEBYSCORE", KEYS[1], "(" .. now, "+inf")`

// RWStatus is what the nodes hold of a redlock.RWMutex.
type RWStatus struct {
	// Writer is the status of the writer's key, the lock's name.
	Writer LockStatus
	// Readers holds, per node in the order of the addresses given to New,
	// the number of live readers' entries, or -1 when the node's are
	// unknown; ReaderErrs says why.
	Readers    []int
	ReaderErrs []error
	// ReadHolds is the number of readers whose entries a quorum of nodes
	// holds: the read holds.
	ReadHolds int
}

// RWStatus reads the read/write lock name: its writer's key, as Status
// reads a lock, and on every node the readers whose entries are live by
// the node's clock. It changes nothing.
func (i *Inspector) RWStatus(ctx context.Context, name string) (RWStatus, error) {
	writer, err := i.Status(ctx, name)
	if err != nil {
		return RWStatus{}, err
	}
	round := i.group.NewRound()
	round.SetCommand("EVAL", liveReadersScript, "1", name+naming.ReadersKeySuffix)
	i.group.Send(round, time.Now().Add(timeout))
	if err := i.group.Wait(ctx, round, nil); err != nil {
		return RWStatus{}, fmt.Errorf("inspect: status %q: %w", name, err)
	}
	status := RWStatus{Writer: writer, Readers: make([]int, len(i.addresses)), ReaderErrs: make([]error, len(i.addresses))}
	holders := make(map[string]int) // reader's token → nodes with its entry
	for n := range i.addresses {
		reply := round.Reply(n)
		switch {
		case round.Err(n) != nil:
			status.Readers[n], status.ReaderErrs[n] = -1, round.Err(n)
			continue
		case reply.IsError():
			status.Readers[n], status.ReaderErrs[n] = -1, fmt.Errorf("inspect: node %s: readers of %q: %w", i.addresses[n], name, reply.Err())
			continue
		}
		status.Readers[n] = len(reply.Elems)
		for _, member := range reply.Elems {
			token, _, _ := strings.Cut(string(member.Str), " ")
			holders[token]++
		}
	}
	for _, nodes := range holders {
		if nodes >= i.need {
			status.ReadHolds++
		}
	}
	return status, nil
}
