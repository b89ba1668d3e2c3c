// Package bench compares lockmux with the Redis lock libraries people would
// pick instead, side by side, against the same real redis-server processes
// and in the same run, so that the ratios between them mean something.
//
// It is a Go module of its own (bench/go.mod), so that the main module never
// depends on the peers. The peers, each behind the small locker and session
// interfaces of this package:
//
//   - floor: the hand-written zero-allocation client of internal/floor, one
//     connection per goroutine per node, SET NX PX then EVALSHA
//     compare-and-delete written to all N nodes at once; N = 1, 3, 5.
//   - lockmux: redlock.New over the N nodes, one Mutex per goroutine per key,
//     reused; N = 1, 3, 5.
//   - redsync: go-redsync/redsync v4 with one go-redis v9 pool per node;
//     N = 1, 3, 5. Single attempts use TryLockContext (one try, as a Mutex
//     made WithTries(1)); the blocking lock keeps redsync's defaults, 32
//     tries 50 to 250 ms apart, and is called again when they run out.
//   - goredis: go-redis v9 by hand, SET NX PX and an EVALSHA
//     compare-and-delete over one client; N = 1.
//   - redislock: bsm/redislock over one go-redis v9 client; N = 1.
//   - rueidislock: rueidis's rueidislock with KeyMajority 1 over one rueidis
//     client; N = 1. Its design differs from the others: it takes
//     2·KeyMajority−1 keys on the same server rather than one key on N
//     independent servers, renews every hold in a goroutine of its own, and
//     wakes the waiters of its own process through a local gate and RESP3
//     client-side caching invalidations instead of polling. Its per-key
//     attempt timeout (TryNextAfter) is raised from 20 ms to 50 ms, lockmux's
//     per-node timeout, because 20 ms fails attempts on a busy machine.
//
// The scenarios, one lock and one unlock per op unless said otherwise:
//
//   - BenchmarkSerial: one goroutine on one key.
//   - BenchmarkParallel: 32 goroutines, each on its own key.
//   - BenchmarkContention: 8 goroutines on one key, single attempts; an op
//     is one attempt (and its unlock when it acquired); acq/s reports the
//     acquisitions per second.
//   - BenchmarkHandoff: 8 goroutines on one key with the blocking lock and
//     the peer's default retry settings; each holds the lock for 1 ms,
//     unlocks, stays away 2 ms and locks again. An op is one acquisition;
//     acq/s reports acquisitions per second and gap-µs the mean time from
//     an unlock returning to the next lock returning. Only the peers with a
//     blocking lock take part: lockmux, redsync and rueidislock.
//   - BenchmarkHandoffPair: the handoff with 2 goroutines that lock again
//     as soon as they unlock: a Lock that finds the key held waits for the
//     release alone, and its allocations are a lone waiter's. The goroutine
//     that unlocked may win the key back; a peer that polls does so most
//     of the time, so acq/s is not a rate of handoffs.
//   - BenchmarkFairness: lockmux alone, 8 goroutines on one key with the
//     handoff's rhythm, plain and with MutexOptions.Fair; it reports the
//     50th and 99th percentiles of the waits of Lock (p50-ms, p99-ms).
//
// Serial, parallel and contention use the single-attempt lock of every
// peer; on a free key it costs what the blocking lock costs.
//
// The lock family has no peer to compare with: none of the Go libraries
// above offers a fair lock, a semaphore or a read/write lock across
// independent masters (redsync, redislock and rueidislock lock one key).
// The uncontended cycles of lockmux's Semaphore, RWMutex and fair lock are
// measured against its Mutex on the same nodes in the redlock package
// (BenchmarkSemaphoreCycle, BenchmarkRWMutexCycle, BenchmarkFairLockCycle).
//
// Beside ns/op, B/op and allocs/op, every benchmark reports cpu-ns/op, the
// CPU time of the whole benchmark process (user and system, all threads,
// the garbage collector included) per op, and goroutines/op, the goroutines
// created per op (runtime/metrics /sched/goroutines-created) less those the
// benchmark itself starts.
//
// # Running
//
// run.sh starts five redis-server processes on free loopback ports, runs
// every benchmark six times, and prints a benchstat table and a summary
// (cmd/summary): per scenario and N, each peer's medians with their ratios
// to the floor and to lockmux, then the targets of DESIGN.md §3, met or
// missed. The raw output is kept in results/ (not committed):
//
//	./run.sh
//	BENCH_COUNT=1 BENCH_PATTERN=Serial ./run.sh
//
// Run it on an otherwise idle machine: the nodes are redis-server processes
// on the same CPUs, and a machine busy with other work stalls them for tens
// or hundreds of milliseconds, which the peers' timeouts (lockmux 50 ms per
// node, rueidislock 50 ms, redsync 500 ms) turn into failed benchmarks.
//
// The benchmarks also run on their own. They take the servers from
// LOCKMUX_BENCH_ADDRS (at least five comma-separated host:port addresses)
// or, when it is unset, start five redis-server processes through
// internal/redistest, and skip when redis-server is not installed:
//
//	go test -run '^$' -bench . -benchmem
//
// Every sub-benchmark starts with FLUSHALL on every node, so the servers
// must hold nothing worth keeping.
//
// # Concurrency
//
// A locker is safe for concurrent use; a session belongs to one goroutine
// at a time, which is how every scenario uses them.
//
// # Errors
//
// A lock attempt that finds the lock held is not an error: tryLock returns
// false. Any other error, or an unlock that could not release the hold,
// fails the benchmark.
package bench
