// Package redlock implements distributed locks on Redis: the single-instance
// lock and Redlock over N independent masters, with automatic renewal,
// waiting without polling, opt-in fencing tokens, locks over several keys,
// the resumption of a hold by its token, semaphores, read/write locks and
// fair locks. A node may be a master that Redis Sentinel serves, or a Redis
// Cluster whose commands go to the masters of their keys' slots (see New;
// the keys of one lock must then share a hash slot), and
// Options.Quarantine keeps a node that may have lost keys (a restart, a
// promoted replica, a flush) out of the locks for the longest TTL.
//
// A Client talks to the nodes; a Mutex, made by Client.NewMutex, locks one
// resource (or several, see MutexOptions.Keys), and a Semaphore, made by
// Client.NewSemaphore, admits a bounded number of holders, and an RWMutex,
// made by Client.NewRWMutex, many readers or one writer (see each type for
// its safety argument):
//
//	c, err := redlock.New([]string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}, redlock.Options{})
//	if err != nil { … }
//	defer c.Close()
//
//	m := c.NewMutex("orders:1001", redlock.MutexOptions{TTL: 10 * time.Second})
//	if err := m.Lock(ctx); err != nil { … }  // retries with jitter until acquired or ctx is done
//	defer m.Unlock(ctx)                       // errors.Is(err, redlock.ErrLockLost) if the hold was gone
//
//	err = c.Do(ctx, "orders:1001", redlock.MutexOptions{}, func(ctx context.Context) error {
//		// The lock is renewed while this runs; ctx is cancelled, with a
//		// cause matching ErrLockLost, if the hold is lost. The lock is
//		// released when this returns, and also when it panics.
//		return nil
//	})
//
// An acquisition sends SET key token NX PX ttl to every node at once, with a
// random token of 20 bytes from crypto/rand. The lock is acquired when a
// quorum of N/2+1 nodes set the key and the hold's validity, measured from
// the start of the attempt, is still positive. A failed attempt releases
// every node whose answer was OK or unknown. A release is a compare-and-delete
// script that deletes the key only if it still holds the token, and an
// extension a compare-and-PEXPIRE script; both must reach a quorum to count.
//
// The operations tools are packages of their own, under this one, each
// configured by the same Options as a Client: doctor checks that the nodes
// can carry Redlock safely and says what to fix (a service runs doctor.Run
// at start-up), inspect reads who holds a lock and finds lock keys without
// a TTL, and fencedstore is the storage side of fencing for a resource kept
// in Redis.
//
// # Long holds and waiting
//
// With MutexOptions.AutoExtend (implied by Client.Do) a hold is extended
// a third of its TTL after its start and after each extension (sooner when
// less validity is left, as for a resumed hold) by one goroutine that
// serves every hold of the Client, and the extensions that come due
// together share their writes. The end of every hold is watched by a timer
// of its own, whatever the renewal is doing: it fires two node timeouts
// before the validity of a renewed hold ends, unless an extension that a
// quorum confirmed moved it later, and when the validity of a hold that is
// not renewed passes. Then Mutex.Done is closed and Do's context is
// cancelled with a cause that matches ErrLockLost. Of the two node
// timeouts, one is for the holder to stop while the hold is still exclusive, the other for a
// renewal attempt to finish before then: a failed extension is retried at
// the retry delay as long as an attempt can finish in time, and once none
// can the hold is declared lost at once. A Mutex with AutoExtend whose TTL
// is shorter than five node timeouts is refused (ErrInvalidOptions).
// MutexOptions.MaxHold bounds the renewal: a hold that reaches it ends the
// same margin before its validity. Client.Close ends every hold at once,
// with a cause that matches both ErrLockLost and ErrClosed.
// Unlock stops the renewal, also while an extension is in flight. An
// extension that a quorum confirms also repairs the nodes that answered
// that a key was missing (a restart without the data, an eviction), if the
// hold had them: they confirmed its acquisition, its resumption or an
// earlier such extension. A repair sets every key of the hold again with
// its token and the extension's TTL, unless one of them holds another
// token; it is not awaited. A node that never gave the hold its vote gets
// no key from it. Every deadline is a reading of the monotonic clock
// (time.Now).
//
// Lock and TryLock check the validity of the hold they won as their last
// step, after the observers have run: a hold whose validity ended by then
// is released and not returned, and the attempt counts as failed.
//
// A Lock that finds the lock held waits for its release instead of polling:
// the release script publishes on the channel "lockmux:released:" followed
// by the key, for every key it released, and the Client keeps one
// subscription connection per node, shared by all its waiters, subscribed
// only to the keys somebody waits for: every key of a multi-key Mutex, so
// that the release of any key that blocks it wakes it, whatever lock held
// that key. The message is the release's identity, drawn at random by each
// Unlock (not the token), so that two releases of one token
// (MutexOptions.Token) are two releases. One release wakes at most one
// waiter of the Client per key, once a quorum of nodes announced it on the
// key's channel: the one that waited longest among those listening, and
// none when a waiter woken for the same release on another key waits on
// this one too. Waiters in the same Client as the releasing Unlock are
// woken by it at once. While a quorum of nodes can notify, a waiter that
// hears nothing still retries, eight retry delays later.
// Options.RetryDelayMin gives the whole rule for the gaps between the
// attempts of a Lock.
//
// Notifications need RESP3, and a user that may use the release channels.
// A node that speaks only RESP2, every node when Options.Protocol is
// ProtocolRESP2 (then no RESP3 connection is made), and a node whose ACL
// refuses the subscription (Redis 7 gives a new user no channel) cannot
// notify: each is found out once, by its connection's handshake or by the
// refused SUBSCRIBE, reported once to the Observer (OnNodeError with
// OperationSubscribe and an error matching ErrNotificationsUnavailable),
// and not dialled for notifications again. The other nodes go on
// notifying. While fewer than a quorum of nodes can notify, waiters retry
// at the retry delay. The ACL rule that allows the channels is
// &lockmux:released:PATTERN, with the pattern of the lock keys
// (&lockmux:released:* for every key); docs/acl.md gives the whole minimal
// rule of a lockmux user. Without it a release still succeeds, only
// unannounced. On a Client with a Redis Cluster member, releases are
// announced with sharded pub/sub on every node (SPUBLISH on the master of
// the key's slot, SSUBSCRIBE), on the channel lockmux:released:{TAG}KEY,
// TAG a hash tag of the key's slot (see docs/deployments.md); while the slot
// migrates, a release that followed an ASK to the importing master is
// announced again on the master the slot leaves, where waiters listen
// until the migration ends. doctor.Run checks it. A subscription connection that fails is dialled again after a
// jittered backoff that doubles up to 2 s.
//
// MutexOptions.Token resumes a hold by its token, in this process or
// another: the check counts only if a quorum still holds the keys with the
// token, and the validity is the TTL a quorum has left, less the drift
// allowance of that remaining TTL. If the hold has expired, the attempt
// acquires the lock anew with the same token.
//
// # Concurrency
//
// A Client and its Mutexes are safe for concurrent use. A goroutine that
// locks a Mutex held by another goroutine of the same process waits locally,
// without network traffic, and takes its turn when the Mutex is unlocked.
// A Client owns the goroutines it starts (dials, the finishers of releases
// in flight, renewals, shared subscriptions) and Client.Close waits for
// them. A context bounds its caller's wait and nothing else: when it ends,
// the call returns at once with the context's error, and the commands it
// sent go on without it on connections that other goroutines share.
// Client.Close ends the waits of Lock the same way: every goroutine
// waiting between attempts, for a release or for its turn returns at once
// with an error matching ErrClosed. An Observer is called synchronously on
// the goroutine of the operation it reports, so it must be fast and safe
// for concurrent use.
//
// # Errors
//
// A failed acquisition or resumption matches ErrNotAcquired, and a release,
// extension or renewal that cannot prove the hold matches ErrLockLost, both
// through errors.Is. When the nodes did not reach a quorum, the error is a
// *QuorumError with one NodeResult per node (confirmed, held by another,
// missing or expired, error, timeout, not sent, with its latency); it
// unwraps to the nodes' errors, so that errors.Is and errors.As see the
// server errors and timeouts behind it; the transport's failures (no
// connection, no reply in time, a connection that broke) match
// ErrNodeUnreachable, and a node's error reply does not. When too many
// nodes failed for a
// quorum to be possible, the error also matches ErrQuorumUnreachable and is
// returned at once instead of being retried. Errors caused by the context
// still match context.Canceled or context.DeadlineExceeded.
// ErrReleaseUnconfirmed marks a release that a node never confirmed after
// Unlock had returned (reported to the Observer, and by Client.Close).
// ErrConfig marks answers that retrying cannot fix (NOAUTH, WRONGPASS, NOPERM, WRONGTYPE,
// READONLY, cluster redirects, and ErrFenceCounter, a fencing counter that
// is not an integer in range), ErrDuplicateNode two addresses that reach one
// server, ErrInvalidOptions options that cannot be used, and ErrClosed calls
// on a closed Client.
//
// # Safety
//
// A Redis lock is a lease: it expires after its TTL whether or not its
// holder is done. Redlock keeps mutual exclusion only under assumptions that
// the library cannot check by itself:
//
//   - The clocks of the client and of the nodes run at about the same rate.
//     The validity of a hold is ttl − elapsed − (ttl·DriftFactor + 2 ms),
//     measured on the client's monotonic clock from the start of the attempt
//     or extension that produced it; the drift term must cover the real rate
//     difference. Redis expires keys by its wall clock, so a node whose clock
//     jumps forward expires locks early, and no client setting can prevent
//     it: keep the nodes' clocks slewed, not stepped.
//   - A node does not lose keys when it restarts. Either it persists every
//     write before acknowledging it (appendonly yes with appendfsync always),
//     or it is kept down, after a crash, for longer than the longest TTL in
//     use (extensions included). A node that comes back empty at once can
//     grant a second holder a quorum. Lock nodes must also use
//     maxmemory-policy noeviction, because an evicted lock key is a lost one.
//   - The holder is not paused for longer than the validity of its hold. A
//     process that stops (garbage collection, swapping, a stopped VM) after
//     acquiring the lock may resume after the lock expired and another
//     process took it, and no lease lock can tell it in time. Check
//     Mutex.Until or the lock-scoped context before each step, and make the
//     resource itself reject stale writers with fencing tokens.
//
// Plain Redlock gives no fencing token: its random token tells holders apart
// but does not order them. With MutexOptions.Fencing, an acquisition also
// yields a fence, a number that strictly increases with each acquisition of
// the resource. It takes a second round: each node that set the keys
// returns the largest of their counters, the client takes the largest
// answer plus one, and a script raises every key's counter to that value
// on those nodes while the keys still hold the token; the fence is granted
// only if the commit reached a quorum within the validity. The counter of
// key K is the key "K:lockmux-fence" on every node, whichever Mutex locks
// K, alone or with other keys. Any later acquisition of K has a quorum
// that shares a node with this one and reads K's committed counter there,
// so its fence is larger. The counters are decimal integers, compared and
// raised exactly up to 2^63−1 (never as Lua numbers, which are doubles);
// a counter that is not one, or that has no next fence, fails the node's
// vote with an error matching ErrFenceCounter, and the node keeps no lock
// key of the attempt. The counters have no TTL, and they survive a crash
// only with persistence (appendfsync always): a node that loses them can
// hand out a fence again. A storage layer uses the fence by refusing any
// write whose fence is lower than the highest it has seen, for example
// with UPDATE … SET …, last_fence = $1 WHERE … AND last_fence <= $1, or
// with a fencedstore.Store (package
// github.com/lockmux/lockmux/redlock/fencedstore) for a resource kept in
// Redis.
package redlock
