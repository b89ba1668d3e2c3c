// Package spare keeps values for reuse: a bounded free list, which a
// garbage collection does not empty as it does a sync.Pool. The Client
// lends its locks' rounds and wait states from such lists, and its
// watcher its arming batches.
package spare
