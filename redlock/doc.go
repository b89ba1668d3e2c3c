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
// Client.Do runs a function under a lock that is renewed while it runs; its
// context is cancelled if the hold is lost. The lock family adds the
// Semaphore (Client.NewSemaphore), the RWMutex (Client.NewRWMutex), fair
// locks (MutexOptions.Fair), locks over several keys (MutexOptions.Keys)
// and the resumption of a hold by its token (MutexOptions.Token). An
// Election (Client.NewElection) elects one leader on a renewed, fenced
// hold.
//
// An acquisition sends SET key token NX PX ttl to every node at once. It
// succeeds when a quorum of N/2+1 nodes set the key and the hold's validity,
// the TTL less the time elapsed and the drift allowance, is positive. A
// release deletes the key only where it still holds the token; an
// extension works the same way. Both must reach a quorum to count.
//
// The guides are in the repository's docs/ folder: waiting.md (waiting and
// retries), renewal.md (renewal and Done), fencing.md, lock-family.md,
// deployments.md (the quarantine, Sentinel, Cluster), acl.md, errors.md,
// election.md.
// The packages doctor, inspect and fencedstore, under this one, check the
// nodes, read who holds a lock, and guard a resource kept in Redis;
// slogobserver logs a Client's events through log/slog.
//
// # Words
//
// One name per idea, in every package of the module:
//   - node: one of the N independent Redis endpoints of a Client: a plain
//     server, a master that Redis Sentinel serves, or a Redis Cluster (a
//     Cluster member, in the docs).
//   - server: one redis-server process. A node is one server, or many for
//     a Redis Cluster, whose masters are the servers that own its slots.
//   - operation: what a caller asks of a lock (Operation): lock, unlock,
//     extend or resume.
//   - command: what one step of an operation sends to each node, a row of
//     the protocol table.
//   - round: one command sent to every node, and their replies counted.
//   - vote: a node's confirmation in a round, which counts towards a
//     quorum of N/2+1.
//   - hold: one acquisition of a lock, from Lock to Unlock or its loss;
//     its validity is how long it is safe to use.
//   - marker: a node's epoch marker, by which the quarantine judges
//     whether the node may have lost keys.
//
// # Concurrency
//
// A Client and its Mutexes are safe for concurrent use. A Client owns the
// goroutines it starts, and Client.Close waits for them. A context bounds
// its caller's wait and nothing else: commands already sent go on without
// it. An Observer is called on the goroutine of the operation it reports:
// it must be quick and safe for concurrent use.
//
// # Errors
//
// A failed acquisition matches ErrNotAcquired, and a release or extension
// that cannot prove the hold matches ErrLockLost (errors.Is). A failed
// quorum is a *QuorumError with one NodeResult per node; it unwraps to the
// nodes' errors. ErrQuorumUnreachable marks a failure that retrying cannot
// fix now, ErrConfig answers that retrying never fixes, ErrInvalidOptions
// unusable options, and ErrClosed a closed Client. Errors caused by a
// context match context.Canceled or context.DeadlineExceeded.
//
// # Safety
//
// A lock is a lease: it ends after its TTL whether or not its holder is
// done. Redlock keeps mutual exclusion only if the clocks of the client and
// the nodes run at about the same rate (Options.DriftFactor covers the
// difference), if a node never loses keys it acknowledged (persistence with
// appendfsync always, or Options.Quarantine), and if a holder is never
// paused for longer than its validity. Plain Redlock gives no fencing
// token; MutexOptions.Fencing adds a fence that strictly increases with
// each acquisition, which the resource can check to refuse stale writers.
package redlock
