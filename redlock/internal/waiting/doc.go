// Package waiting is the waiting room of the lock package: what a Lock
// does between two failed attempts.
//
// A Notifier holds one subscription connection per node and the release
// channels its waiters listen on. A release announced by a quorum of
// nodes wakes one Waiter; a fair lock's release wakes the first in line.
// Channels nobody waits on stay subscribed, idle, up to a limit. A Waiter
// holds one lock's wait state. Its Retry is the one retry loop that
// Mutex.Lock and Semaphore.Acquire share. Between attempts it waits the
// retry delay (Rule), or for a release.
//
// # Concurrency
//
// The Notifier is safe for concurrent use. One mutex guards its channels
// and the waiter fields it writes. A Waiter belongs to the goroutine that
// has its lock's turn. The mix of kinds is deliberate:
//   - the mutex guards what the notifier's goroutines share;
//   - atomics hold what is read without it: the counters a Lock reads on
//     its fast path, and the wake-up flags a sleeping waiter takes;
//   - a channel of one token wakes a waiter, since its wait selects on
//     the token, the timer, ctx and Close together.
//
// # Errors
//
// Only Retry fails: with the error its Attempts make.
package waiting
