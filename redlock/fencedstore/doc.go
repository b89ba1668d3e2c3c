// Package fencedstore is the storage side of fencing for a resource kept
// in Redis: a Store applies a write only if the writer's fence is not
// older than the newest fence already applied to that key, so that a
// holder who lost its lock (a pause, a partition) cannot overwrite the work
// of the next one. The fence comes from a redlock.Mutex with
// MutexOptions.Fencing (Mutex.Fence).
//
// The check and the write are one script (fenced_set.lua), atomic on the
// server. For a SQL database the same rule is one statement:
//
//	UPDATE resource SET value = $2, last_fence = $1 WHERE id = $3 AND last_fence <= $1
//
// and zero rows updated means the write was refused.
//
// # Concurrency
//
// A Store is safe for concurrent use. It owns one connection, which Close
// closes. A context bounds how long its caller waits for Set, nothing
// else: when it ends, Set returns at once, and the write may still be
// applied.
//
// # Errors
//
// New fails with an error matching redlock.ErrInvalidOptions for invalid
// options or an address that cannot be parsed. Set returns the node's
// error (an error reply, a connection that failed, a node that did not
// answer within mux.DefaultRequestTimeout) wrapped with the key, and an error
// matching the context's when the context ended first. A write refused for
// its fence is not an error: Set reports it.
package fencedstore
