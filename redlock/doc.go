// Package redlock gives processes on many machines exclusive access to a
// resource through Redis: the single-instance lock, and Redlock over N
// independent masters.
//
// A Client talks to the nodes. A Mutex, made by Client.NewMutex, locks one
// resource:
//
//	c, err := redlock.New([]string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}, redlock.Options{})
//	if err != nil { … }
//	defer c.Close()
//
//	m := c.NewMutex("orders:1001", redlock.MutexOptions{TTL: 10 * time.Second})
//	if err := m.Lock(ctx); err != nil { … } // waits until acquired or ctx ends
//	defer m.Unlock(ctx)
//
// Client.Do runs a function under a renewed lock. The lock family adds
// Semaphore, RWMutex, fair locks, multi-key locks and resumption; an
// Election elects one leader.
//
// An acquisition sends SET key token NX PX ttl to every node at once. It
// succeeds when a quorum of N/2+1 nodes set the key within the validity.
// A release or extension acts only where the key still holds the token.
//
// The guides are in the repository's docs/ folder. The packages doctor,
// inspect, fencedstore and slogobserver, under this one, check nodes, show
// holders, guard a resource in Redis, and log events.
//
// # Words
//
// One name per idea, in every package of the module.
//   - node: one of a Client's N independent Redis endpoints: a server, a
//     Sentinel master, or a Redis Cluster (a Cluster member).
//   - server: one redis-server process; a Cluster node has many.
//   - operation: what a caller asks of a lock: lock, unlock, extend,
//     resume.
//   - command: what one step of an operation sends to each node.
//   - round: one command sent to every node, its replies counted.
//   - vote: a node's confirmation in a round, towards a quorum of N/2+1.
//   - hold: one acquisition, from Lock to Unlock or loss; its validity is
//     how long it is safe to use.
//   - marker: a node's epoch marker, by which the quarantine judges it.
//
// # Concurrency
//
// A Client and its Mutexes are safe for concurrent use; Client.Close waits
// for the goroutines a Client starts. A context bounds its caller's wait
// only: commands already sent go on.
//
// # Errors
//
// A failed acquisition matches ErrNotAcquired; a release or extension that
// cannot prove the hold matches ErrLockLost. A failed quorum is a
// *QuorumError with one NodeResult per node. Errors caused by a context
// match context.Canceled or context.DeadlineExceeded.
//
// # Safety
//
// A lock is a lease that ends after its TTL. Redlock keeps mutual
// exclusion under three conditions. Clocks run at about the same rate
// (Options.DriftFactor). Nodes keep acknowledged keys (appendfsync always,
// or Options.Quarantine). No holder pauses beyond its validity.
// MutexOptions.Fencing lets the resource refuse stale writers.
package redlock
