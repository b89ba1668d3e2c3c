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
	// marker is what MarkerScript answers on that master, with that master's
	// marker, while it stays as its last reading left it (as
	// quarantineNode.marker).
	marker string
}

// masterReading is what the epoch script answered on one master of a
// Redis Cluster node.
type masterReading struct {
	age    time.Duration
	marker string // as masterVerdict.marker
}

// askMasters runs the epoch script with action on every master of node, a
// Redis Cluster, each on a marker of its own. It answers as one node
// would, with the age of the youngest marker, and gives each master's
// reading by the address of the server that answered: a failover or a
// flush of one master keeps that master's shard out. A master that does
// not answer makes the node's verdict unknown.
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
