package epoch

import (
	"context"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// AgeScript returns the age of the epoch marker KEYS[1] in milliseconds,
// by the node's clock, or -1 when it is missing or was written by another
// server process. It only reads.
const AgeScript = `local marker = redis.call("GET", KEYS[1])
if not marker then
  return -1
end
local id, written = string.match(marker, "^(%w+) (%d+)( ?%a*)$")
local run_id = string.match(redis.call("INFO", "server"), "run_id:(%w+)")
if id ~= run_id or not written then
  return -1
end
local t = redis.call("TIME")
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(written)`

// AskMasters sends script to every master of node, a Redis Cluster, at
// once, with that master's marker (naming.ClusterEpochKey) as its one key
// and arguments after it, and returns one answered request per master
// (mux.Request.Server names it). It returns nil for a node that is not a
// cluster.
func AskMasters(ctx context.Context, group *mux.Group, node int, script string, arguments ...string) ([]*mux.Request, error) {
	tags, err := group.MasterTags(ctx, node)
	if err != nil || tags == nil {
		return nil, err
	}
	requests := make([]*mux.Request, len(tags))
	for i, tag := range tags {
		requests[i] = mux.NewRequest(append([]string{"EVAL", script, "1", naming.ClusterEpochKey(tag)}, arguments...)...)
	}
	if err := group.Do(ctx, node, requests...); err != nil {
		return nil, err
	}
	return requests, nil
}
