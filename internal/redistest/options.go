package redistest

import (
	"strings"
	"time"
)

// Persistence selects how a real redis-server keeps its data across a crash.
type Persistence int

const (
	// PersistenceNone runs the server without RDB snapshots or an append-only
	// file: a restarted server starts empty.
	PersistenceNone Persistence = iota
	// PersistenceAOF runs the server with the append-only file and
	// appendfsync always: every acknowledged write survives Kill9 and Restart.
	PersistenceAOF
)

// String returns the name of the persistence mode.
func (p Persistence) String() string {
	switch p {
	case PersistenceNone:
		return "none"
	case PersistenceAOF:
		return "aof-always"
	default:
		return "unknown"
	}
}

// Options configures a server started by Start. The zero value starts a
// plain server: no persistence, no password, no TLS, DEBUG allowed from
// loopback.
type Options struct {
	// Persistence selects the persistence mode; the default is PersistenceNone.
	Persistence Persistence

	// Password is the password of the default user (requirepass). Start and
	// Do authenticate with it.
	Password string

	// ACLUsers holds one ACL SETUSER rule string per user, the user name
	// first, for example "locker on >pw ~* +@all -eval". The words are
	// separated by white space, so a password cannot contain spaces. ACL rules
	// need a real redis-server: with the miniredis fallback Start skips the test.
	ACLUsers []string

	// TLS makes the server accept TLS connections only, with a certificate
	// signed by a certificate authority generated for this server. Clients get
	// a matching configuration from (*Server).TLSConfig.
	TLS bool

	// DisableDebugCommand turns the DEBUG command off. By default it is
	// enabled for loopback connections (--enable-debug-command local).
	DisableDebugCommand bool

	// ExtraArgs are appended to the redis-server command line, for example
	// []string{"--maxmemory-policy", "noeviction"}. The miniredis fallback
	// ignores them.
	ExtraArgs []string

	// Env is added to the environment of the redis-server process, for
	// example "LD_PRELOAD=/path/to/shim.so". The miniredis fallback ignores it.
	Env []string

	// Miniredis runs an in-process miniredis server even when redis-server is
	// available. Use it for tests that move time with FastForward.
	Miniredis bool

	// Sentinel, when set, starts a sentinel (redis-server --sentinel) that
	// monitors one master, instead of a data server. Password is the
	// sentinels' own (requirepass, and sentinel-pass for each other);
	// Persistence, ACLUsers, TLS and the debug command do not apply to it. It
	// needs a real redis-server: with the miniredis fallback Start skips
	// the test.
	Sentinel *Sentinel
}

// Sentinel is what a sentinel started by Start monitors, and how fast it
// acts.
type Sentinel struct {
	// MasterName is the name the sentinel gives the master; Master is the
	// master's "host:port".
	MasterName, Master string
	// Quorum is the number of sentinels that must agree that the master
	// is down before a failover.
	Quorum int
	// DownAfter is how long the master must not answer to be thought down
	// (sentinel down-after-milliseconds); FailoverTimeout bounds a
	// failover (sentinel failover-timeout). Zero means 500 ms and 2 s.
	DownAfter, FailoverTimeout time.Duration
}

// aclUser is one parsed entry of Options.ACLUsers.
type aclUser struct {
	name  string
	rules []string
}

// parseACLUsers splits each ACL rule string into the user name and its rules.
func parseACLUsers(users []string) ([]aclUser, error) {
	parsed := make([]aclUser, 0, len(users))
	for _, line := range users {
		words := strings.Fields(line)
		if len(words) == 0 {
			return nil, errEmptyACLUser
		}
		parsed = append(parsed, aclUser{name: words[0], rules: words[1:]})
	}
	return parsed, nil
}
