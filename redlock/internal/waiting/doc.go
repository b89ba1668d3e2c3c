// Package waiting is the waiting room of the lock package: what a Lock
// does between two failed attempts.
//
// A Notifier holds one subscription connection per node and the release
// channels its waiters listen on. A release announced by a quorum of
// nodes wakes one Waiter; a fair lock's release wakes the first in line.
// Channels nobody waits on stay subscribed, idle, up to a limit. A Waiter
// holds one lock's wait state, and its WaitToRetry is the one wait that
// Mutex.Lock and Semaphore.Acquire share: for the retry delay
// (RetryDelay), or for a release.
//
// # Concurrency
//
// The Notifier is safe for concurrent use: one mutex guards its channels
// and the waiters' fields that it writes. A Waiter belongs to the
// goroutine that has its lock's turn; the Notifier wakes it through
// atomics and a channel of one token.
//
// # Errors
//
// Only WaitToRetry fails: with the context's cause when ctx ends.
package waiting
