package quarantine

import (
	"context"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// masterVerdict is the verdict of one master of a Redis Cluster node.
type masterVerdict struct {
	until int64 // as quarantineNode.until
	// marker is as quarantineNode.marker, on that master.
	marker string
}

// masterReading is the epoch script's answer on one Cluster master.
type masterReading struct {
	age    time.Duration
	marker string // as masterVerdict.marker
}

// askMasters runs the epoch script on every master of a Cluster node. It
// answers as one node with the youngest marker's age. Each master's
// reading is kept by address, so a failover keeps its shard alone out. A
// master that does not answer makes the verdict unknown.
func (q *Quarantine) askMasters(ctx context.Context, node int, action string) (resp.Value, map[string]masterReading, error) {
	requests, err := AskMasters(ctx, q.config.Group, node, EpochScript.Source(), action, "")
	if err != nil {
		return resp.Value{}, nil, fmt.Errorf("%w: %w", q.config.Unreachable, err)
	}
	youngest, ok := Youngest(requests)
	if !ok {
		if youngest == nil {
			return resp.Value{}, nil, nil
		}
		return youngest.Reply().Clone(), nil, nil
	}
	readings := make(map[string]masterReading, len(requests))
	for _, request := range requests {
		reply := request.Reply()
		age, _ := Age(reply)
		read := masterReading{age: time.Duration(age) * time.Millisecond}
		if len(reply.Elems) == 2 && reply.Elems[1].Type == resp.TypeBulkString {
			read.marker = string(reply.Elems[1].Str)
		}
		readings[request.Server()] = read
	}
	return youngest.Reply(), readings, nil
}
