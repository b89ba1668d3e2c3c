package mux

import (
	"context"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/mux/internal/cluster"
	"github.com/lockmux/lockmux/resp"
)

// Request is one command to one server and, once Group.Do returned, its
// reply. Build it with the methods of its command (SetCommand, SetScript,
// AppendString, …). A Request is reusable, and belongs to one caller at a
// time.
type Request struct {
	command
	routeAs string // see RouteAs
}

// NewRequest returns a Request for the given arguments, the first being
// the command's name.
func NewRequest(arguments ...string) *Request {
	r := &Request{}
	r.SetCommand(arguments...)
	return r
}

// RouteAs makes a Redis Cluster send the request to the master of
// key's slot, whatever keys its command names: a keyless command such as
// SCAN, sent with the hash tags of Group.MasterTags, reaches each master
// in turn. Other nodes ignore it; "" routes by the command's own first
// key, as by default.
func (r *Request) RouteAs(key string) { r.routeAs = key }

// Reply returns the server's answer. A server error reply is a Reply of
// type resp.TypeError, not an Err. It stays valid until the Request is
// sent again.
func (r *Request) Reply() resp.Value { return r.call.Reply }

// Err returns the transport failure that kept the reply from arriving, or
// nil.
func (r *Request) Err() error { return r.call.Err }

// Server returns the address of the server that answered the request:
// the node's own, or, for a Redis Cluster, that of the master
// its key's slot led to; "" when it was not sent.
func (r *Request) Server() string { return serverOf(&r.call) }

// Latency returns the time from sending the request to its reply.
func (r *Request) Latency() time.Duration { return r.call.Latency }

// Do sends the requests to server node in one write and waits for their
// replies, each for at most Options.RequestTimeout, or until ctx ends. It
// returns ctx's error when ctx ended first (the requests then go on
// without a waiter), otherwise the first transport error; each request
// has its own outcome.
func (g *Group) Do(ctx context.Context, node int, requests ...*Request) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mux: %s: %w", g.nodes[node].Address(), err)
	}
	server := g.nodes[node]
	clustered, _ := server.(*cluster.Cluster)
	deadline := time.Now().Add(g.options.RequestTimeout)
	for _, request := range requests {
		if clustered != nil && request.routeAs != "" {
			clustered.SendTo(clustered.RouteKey(request.routeAs), &request.call, deadline)
			continue
		}
		server.Send(&request.call, deadline)
	}
	server.Flush()
	var first error
	for _, request := range requests {
		server.Wait(ctx, &request.call)
		if request.call.Abandoned() {
			for _, rest := range requests {
				server.Abandon(&rest.call)
			}
			return fmt.Errorf("mux: %s: %w", server.Address(), request.call.Err)
		}
		if first == nil {
			first = request.call.Err
		}
	}
	return first
}
