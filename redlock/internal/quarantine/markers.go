package quarantine

import (
	"context"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/resp"
)

// AgeScript returns the age of the epoch marker KEYS[1] in milliseconds,
// or -1 when missing or foreign. It only reads.
const AgeScript = `local marker = redis.call("GET", KEYS[1])
if not marker then
  return -1
end
local id, written = string.match(marker, "^(%w+) (%d+)")
local run_id = string.match(redis.call("INFO", "server"), "run_id:(%w+)")
if id ~= run_id or not written then
  return -1
end
local t = redis.call("TIME")
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(written)`

// MasterMarkers returns one epoch marker key per master of a Cluster node,
// routed to it; nil for other nodes.
func MasterMarkers(ctx context.Context, group *mux.Group, node int) ([]string, error) {
	tags, err := group.MasterTags(ctx, node)
	if err != nil || tags == nil {
		return nil, err
	}
	markers := make([]string, len(tags))
	for i, tag := range tags {
		markers[i] = naming.ClusterEpochKey(tag)
	}
	return markers, nil
}

// AskMasters sends script with each master's marker to every master of a
// Cluster node at once. It returns one answered request per master, or
// nil for other nodes.
func AskMasters(ctx context.Context, group *mux.Group, node int, script string, arguments ...string) ([]*mux.Request, error) {
	markers, err := MasterMarkers(ctx, group, node)
	if err != nil || markers == nil {
		return nil, err
	}
	requests := make([]*mux.Request, len(markers))
	for i, marker := range markers {
		requests[i] = mux.NewRequest(append([]string{"EVAL", script, "1", marker}, arguments...)...)
	}
	if err := group.Do(ctx, node, requests...); err != nil {
		return nil, err
	}
	return requests, nil
}

// Youngest returns the AskMasters request with the youngest marker age, or
// the first that answered no age, and false.
func Youngest(requests []*mux.Request) (*mux.Request, bool) {
	var youngest *mux.Request
	var youngestAge int64
	for _, request := range requests {
		age, ok := Age(request.Reply())
		if !ok || age < 0 {
			return request, false
		}
		if youngest == nil || age < youngestAge {
			youngest, youngestAge = request, age
		}
	}
	return youngest, youngest != nil
}

// Age reads a marker's age in milliseconds from AgeScript's or the epoch
// script's reply; false for any other.
func Age(reply resp.Value) (int64, bool) {
	if reply.Type == resp.TypeArray && len(reply.Elems) > 0 {
		reply = reply.Elems[0]
	}
	return reply.Int, reply.Type == resp.TypeInteger
}
