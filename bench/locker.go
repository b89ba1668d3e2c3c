package bench

import (
	"context"
	"errors"
	"time"
)

// lockTTL is the TTL every peer gives its lock keys.
const lockTTL = 10 * time.Second

// errNotReleased is returned by an unlock that could not confirm the
// release of the hold.
var errNotReleased = errors.New("bench: lock not released")

// A locker is one peer library set up over a fixed set of nodes. It is safe
// for concurrent use.
type locker interface {
	// newSession returns a session on key. Creating it may dial
	// connections: the scenarios create every session before timing starts.
	newSession(key string) (session, error)
	// close releases everything the locker holds. Close its sessions
	// first.
	close()
}

// A session is one goroutine's handle on one key, created once and reused
// for every cycle, so that peers that can lock without allocating do. A
// session is used by one goroutine at a time.
type session interface {
	// tryLock makes one attempt to take the lock. It returns false, and no
	// error, when the lock is held by someone else.
	tryLock(ctx context.Context) (bool, error)
	// unlock releases the hold taken by the last successful lock attempt.
	unlock(ctx context.Context) error
	// close releases what the session holds, such as its connections.
	close()
}

// A blockingSession is a session whose peer has a lock that waits for the
// key, with the peer's default retry settings.
type blockingSession interface {
	session
	// lock blocks until it holds the lock or ctx is done.
	lock(ctx context.Context) error
}

// A peer is one library at one number of nodes.
type peer struct {
	name  string // the sub-benchmark's peer= value
	nodes int    // how many of the servers it uses
	// blocking says that its sessions implement blockingSession.
	blocking bool
	open     func(addresses []string) (locker, error)
}

// peers are the libraries compared, in the order of the report.
var peers = []peer{
	{name: "floor", nodes: 1, open: openFloor},
	{name: "lockmux", nodes: 1, blocking: true, open: openLockmux},
	{name: "goredis", nodes: 1, open: openGoRedis},
	{name: "redislock", nodes: 1, open: openRedislock},
	{name: "rueidislock", nodes: 1, blocking: true, open: openRueidislock},
	{name: "redsync", nodes: 1, blocking: true, open: openRedsync},
	{name: "floor", nodes: 3, open: openFloor},
	{name: "lockmux", nodes: 3, blocking: true, open: openLockmux},
	{name: "redsync", nodes: 3, blocking: true, open: openRedsync},
	{name: "floor", nodes: 5, open: openFloor},
	{name: "lockmux", nodes: 5, blocking: true, open: openLockmux},
	{name: "redsync", nodes: 5, blocking: true, open: openRedsync},
}

// quorum returns the number of nodes that make a majority of nodes.
func quorum(nodes int) int {
	return nodes/2 + 1
}
