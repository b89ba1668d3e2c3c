package redistest

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// logFileName is the name of redis-server's log inside the data directory.
const logFileName = "redis.log"

// Server is one Redis server started for a test: a redis-server process
// listening on a loopback port, or, when the binary is missing, an
// in-process miniredis server with the same Addr.
//
// A Server is safe for concurrent use. Its methods without a testing.TB
// argument report failures and skips on the test given to Start, so call
// them from that test's goroutine.
type Server struct {
	t        testing.TB           // the test that started the server
	opts     Options              // as given to Start
	binary   string               // path of redis-server; empty for miniredis
	port     int                  // fixed at start, kept by Restart
	dir      string               // data directory: data files and the log
	stateDir string               // certificates and captured stderr; survives Wipe
	users    []aclUser            // Options.ACLUsers, parsed
	certs    *certificates        // nil unless Options.TLS
	mini     *miniredis.Miniredis // nil for a real server

	mu   sync.Mutex // guards proc and the process's stopped flag
	proc *process   // the current redis-server process; nil before the first start
}

// Start starts a Redis server for t and stops it when t ends.
//
// With redis-server on the PATH it runs a real process on a free loopback
// port, in its own temporary directory, and returns once it answers PING.
// Without the binary it falls back to miniredis, unless
// LOCKMUX_REQUIRE_REDIS=1 is set, in which case the test fails. Options.Miniredis
// asks for miniredis explicitly.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	binary, lookErr := lookupBinary()
	switch chooseBackend(lookErr == nil, realRequired(), opts.Miniredis) {
	case backendMissing:
		t.Fatalf("%s and %s=1 requires it (install redis-server)", missingMessage, RequireRedisEnv)
		return nil
	case backendMiniredis:
		if opts.Sentinel != nil {
			t.Skipf("%s; a sentinel needs it", missingMessage)
		}
		if !opts.Miniredis {
			t.Logf("%s; using miniredis", missingMessage)
		}
		return startMiniredis(t, opts)
	}

	users, err := parseACLUsers(opts.ACLUsers)
	if err != nil {
		t.Fatalf("redistest: Options.ACLUsers: %v", err)
	}
	s := &Server{
		t:        t,
		opts:     opts,
		binary:   binary,
		users:    users,
		dir:      t.TempDir(),
		stateDir: t.TempDir(),
	}
	if opts.TLS {
		if s.certs, err = newCertificates(s.stateDir); err != nil {
			t.Fatalf("%v", err)
		}
	}
	// Registered after TempDir, so it runs before the directories are removed.
	t.Cleanup(s.cleanup)

	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			t.Fatalf("%v", err)
		}
		err = s.launchLocked()
		if err == nil {
			return s
		}
		if !isAddressInUse(err) || attempt == maxPortAttempts {
			t.Fatalf("redistest: start redis-server on %s: %v", s.Addr(), err)
		}
		t.Logf("redistest: port %d was taken; trying another", s.port)
	}
}

// StartN starts n servers with the same options, as Start does.
func StartN(t testing.TB, n int, opts Options) []*Server {
	t.Helper()
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = Start(t, opts)
	}
	return servers
}

// Addr returns the server's address, "127.0.0.1:PORT".
func (s *Server) Addr() string {
	return hostPort(s.port)
}

// Port returns the server's port.
func (s *Server) Port() int {
	return s.port
}

// Dir returns the data directory of a real server: its data files and
// redis.log. It returns "" for miniredis.
func (s *Server) Dir() string {
	return s.dir
}

// IsReal reports whether the server is a redis-server process rather than
// miniredis.
func (s *Server) IsReal() bool {
	return s.mini == nil
}

// Miniredis returns the in-process server, for FastForward and SetError, or
// nil when the server is a real redis-server process.
func (s *Server) Miniredis() *miniredis.Miniredis {
	return s.mini
}

// TLSConfig returns a new client configuration that trusts the server's
// generated certificate authority and verifies the server as 127.0.0.1. It
// returns nil when the server was started without Options.TLS.
func (s *Server) TLSConfig() *tls.Config {
	if s.certs == nil {
		return nil
	}
	return s.certs.clientConfig()
}

// PID returns the process id of a running redis-server, or 0 when the
// process has exited or the server is miniredis.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.proc.running() {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// LogTail returns the last n lines of the server's log, or "" when there is
// no log (miniredis, or nothing written yet).
func (s *Server) LogTail(n int) string {
	if s.mini != nil {
		return ""
	}
	return lastLines(readFileQuietly(filepath.Join(s.dir, logFileName)), n)
}

// readFileQuietly returns the file's contents, or nil when it cannot be read.
func readFileQuietly(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return data
}

// lastLines returns the last n lines of text, without a final newline.
func lastLines(text []byte, n int) string {
	text = bytes.TrimRight(text, "\n")
	if n <= 0 || len(text) == 0 {
		return ""
	}
	lines := strings.Split(string(text), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
