// Package cluster is mux's Redis Cluster client: a Cluster is one node
// of a mux.Group whose slots are on many masters. It routes each command
// to the master of its first key's slot, reads the slot map (CLUSTER
// SHARDS, or CLUSTER SLOTS on Redis 6), and follows MOVED, ASK and
// TRYAGAIN replies. mux is its only user; Group is the seam.
//
// # Concurrency
//
// A Cluster is safe for concurrent use. It reads the slot map on a
// goroutine of its own when a MOVED reply or an unreachable master makes
// it stale, and follows the redirects of carried commands on goroutines of
// their own, each bounded by its command's CarryUntil.
//
// # Errors
//
// A map that cannot be read matches ErrClusterMap; a command redirected
// too often matches ErrRedirectLoop. A call sent before the map could be
// read fails with an error matching conn.ErrNotConnected. mux re-exports
// both sentinels; their messages keep mux's prefix.
package cluster
