package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/resp"
)

// slotRange is a range of slots, first to last included, and the address
// of the master that serves them.
type slotRange struct {
	first, last int
	master      string
}

// ReadSlotsInBackground reads the slot map on a goroutine of its own,
// unless one is at it already.
func (c *Cluster) ReadSlotsInBackground() {
	if !c.background.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer c.background.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 2*c.options.dialTimeout())
		defer cancel()
		c.readSlots(ctx) // a failure leaves the map as it was: the next use asks again
	}()
}

// readSlots reads the slot map from the first node that answers, the
// masters it knows first, then the seeds of the address, and makes it the
// one calls are routed by.
func (c *Cluster) readSlots(ctx context.Context) (*slotMap, error) {
	asked := time.Now().UnixNano()
	c.reading.Lock()
	defer c.reading.Unlock()
	if slots := c.slots.Load(); slots != nil && !c.stale.Load() {
		return slots, nil // read by another goroutine meanwhile
	}
	if c.mapFailed.Load() > asked {
		// Another goroutine failed meanwhile: its callers, queued behind
		// it, do not each wait for a reading of their own.
		return nil, fmt.Errorf("%w: %s: the reading under way when it was asked for failed", ErrClusterMap, c.name)
	}
	var sources []string
	if slots := c.slots.Load(); slots != nil {
		sources = append(sources, slots.hostPorts...)
	}
	sources = append(sources, c.address.Seeds...)
	var failures []error
	for _, source := range sources {
		ranges, err := c.askSlots(ctx, source)
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", source, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		slots, err := c.mapOf(ranges)
		if err != nil {
			return nil, err
		}
		c.stale.Store(false)
		if old := c.slots.Swap(slots); old == nil || old.owner != slots.owner {
			c.mapChanged()
		}
		c.mapFailed.Store(0)
		return slots, nil
	}
	c.mapFailed.Store(time.Now().UnixNano())
	return nil, fmt.Errorf("%w: %s: %w", ErrClusterMap, c.name, errors.Join(failures...))
}

// mapOf makes the slot map of ranges, with a connection per master.
func (c *Cluster) mapOf(ranges []slotRange) (*slotMap, error) {
	slots := &slotMap{}
	for _, r := range ranges {
		master, err := c.server(r.master)
		if err != nil {
			return nil, fmt.Errorf("mux: %s: master %s: %w", c.name, r.master, err)
		}
		for slot := r.first; slot <= r.last; slot++ {
			slots.owner[slot] = master
		}
		if !slices.Contains(slots.masters, master) {
			slots.masters = append(slots.masters, master)
			slots.hostPorts = append(slots.hostPorts, r.master)
		}
	}
	if len(slots.masters) == 0 {
		return nil, fmt.Errorf("%w: %s: no slot has a master", ErrClusterMap, c.name)
	}
	slots.tagMasters()
	return slots, nil
}

// askSlots asks the node at hostPort, on a connection of its own, which
// master serves which slots: CLUSTER SHARDS, or CLUSTER SLOTS where the
// node does not know it (Redis 6).
func (c *Cluster) askSlots(ctx context.Context, hostPort string) ([]slotRange, error) {
	probe, err := c.passingConn(hostPort)
	if err != nil {
		return nil, err
	}
	defer probe.Close()
	host, _, _ := net.SplitHostPort(hostPort)
	call := &conn.Call{Command: resp.AppendCommand(nil, "CLUSTER", "SHARDS")}
	if err := probe.Do(ctx, call); err != nil {
		return nil, err
	}
	if call.Reply.IsError() && strings.Contains(strings.ToLower(string(call.Reply.Str)), "unknown subcommand") {
		call.Reset()
		call.Command = resp.AppendCommand(call.Command, "CLUSTER", "SLOTS")
		if err := probe.Do(ctx, call); err != nil {
			return nil, err
		}
		if call.Reply.IsError() {
			return nil, fmt.Errorf("CLUSTER SLOTS: %w", call.Reply.Err())
		}
		return parseClusterSlots(call.Reply, host, c.address.TLS)
	}
	if call.Reply.IsError() {
		return nil, fmt.Errorf("CLUSTER SHARDS: %w", call.Reply.Err())
	}
	return parseClusterShards(call.Reply, host, c.address.TLS)
}

// parseClusterShards reads the reply to CLUSTER SHARDS: per shard, its
// slot ranges and its nodes, of which the master that is online serves
// the ranges; a shard without one is left out. asked is the host of the node that answered, for nodes
// that give no address of their own.
func parseClusterShards(reply resp.Value, asked string, tls bool) ([]slotRange, error) {
	if reply.Type != resp.TypeArray {
		return nil, fmt.Errorf("%w: CLUSTER SHARDS answered %s", ErrClusterMap, reply.Type)
	}
	var ranges []slotRange
	for _, shard := range reply.Elems {
		slots, nodes := field(shard, "slots"), field(shard, "nodes")
		master := ""
		for _, node := range nodes.Elems {
			// Redis 7.0 calls a failed node's health "fail", the
			// documentation "failed": only "online" serves.
			if health := text(field(node, "health")); text(field(node, "role")) != "master" || (health != "" && health != "online") {
				continue
			}
			host := text(field(node, "endpoint"))
			if host == "" || host == "?" {
				host = text(field(node, "ip"))
			}
			port := field(node, "port")
			if tlsPort := field(node, "tls-port"); tls && tlsPort.Type == resp.TypeInteger && tlsPort.Int > 0 {
				port = tlsPort
			}
			var err error
			if master, err = masterAddress(host, port, asked, "CLUSTER SHARDS"); err != nil {
				return nil, err
			}
			break
		}
		if len(slots.Elems)%2 != 0 {
			return nil, fmt.Errorf("%w: CLUSTER SHARDS gave an odd list of slot bounds", ErrClusterMap)
		}
		for i := 0; i < len(slots.Elems); i += 2 {
			r, err := slotBounds(slots.Elems[i], slots.Elems[i+1], master)
			if err != nil {
				return nil, err
			}
			if master != "" { // slots without a master online are served by nobody: their commands fail
				ranges = append(ranges, r)
			}
		}
	}
	return ranges, nil
}

// parseClusterSlots reads the reply to CLUSTER SLOTS: per range, its
// first and last slot, then its master (host, port, …), then replicas.
func parseClusterSlots(reply resp.Value, asked string, tls bool) ([]slotRange, error) {
	if reply.Type != resp.TypeArray {
		return nil, fmt.Errorf("%w: CLUSTER SLOTS answered %s", ErrClusterMap, reply.Type)
	}
	ranges := make([]slotRange, 0, len(reply.Elems))
	for _, entry := range reply.Elems {
		if len(entry.Elems) < 3 || len(entry.Elems[2].Elems) < 2 {
			return nil, fmt.Errorf("%w: CLUSTER SLOTS gave a range without a master", ErrClusterMap)
		}
		master, err := masterAddress(text(entry.Elems[2].Elems[0]), entry.Elems[2].Elems[1], asked, "CLUSTER SLOTS")
		if err != nil {
			return nil, err
		}
		r, err := slotBounds(entry.Elems[0], entry.Elems[1], master)
		if err != nil {
			return nil, err
		}
		ranges = append(ranges, r)
	}
	return ranges, nil
}

// masterAddress returns the "host:port" of a master that command's reply
// names by host and port: the host of the node asked when the reply gives
// none ("" or "?", as a node that does not know its own address says).
func masterAddress(host string, port resp.Value, asked, command string) (string, error) {
	if host == "" || host == "?" {
		host = asked
	}
	if port.Type != resp.TypeInteger || port.Int <= 0 || port.Int > 65535 {
		return "", fmt.Errorf("%w: %s gave a master without a port", ErrClusterMap, command)
	}
	return net.JoinHostPort(host, strconv.FormatInt(port.Int, 10)), nil
}

// slotBounds checks a range's bounds.
func slotBounds(first, last resp.Value, master string) (slotRange, error) {
	if first.Type != resp.TypeInteger || last.Type != resp.TypeInteger || first.Int < 0 || last.Int < first.Int || last.Int >= SlotCount {
		return slotRange{}, fmt.Errorf("%w: slot bounds %s-%s", ErrClusterMap, first, last)
	}
	return slotRange{first: int(first.Int), last: int(last.Int), master: master}, nil
}

// field returns the value of name in a map, or in an array of names and
// values (RESP2's form of a map); the zero Value when it has none.
func field(entry resp.Value, name string) resp.Value {
	for i := 0; i+1 < len(entry.Elems); i += 2 {
		if text(entry.Elems[i]) == name {
			return entry.Elems[i+1]
		}
	}
	return resp.Value{}
}

// text returns a string reply's text, "" for any other reply.
func text(v resp.Value) string {
	if v.Type == resp.TypeBulkString || v.Type == resp.TypeSimpleString || v.Type == resp.TypeVerbatim {
		return string(v.Str)
	}
	return ""
}
