package redistest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sentinelConfigName is the sentinel's configuration file inside its
// data directory: a sentinel must have one it can rewrite.
const sentinelConfigName = "sentinel.conf"

// sentinelArguments returns the command line of a sentinel: its
// configuration file, created empty on the first start and kept by
// Restart, then the options, and what it monitors.
func (s *Server) sentinelArguments() []string {
	sentinel := s.opts.Sentinel
	config := filepath.Join(s.dir, sentinelConfigName)
	if _, err := os.Stat(config); err != nil {
		// An error here shows at the start: the sentinel refuses to run
		// without its file.
		_ = os.WriteFile(config, nil, 0o644)
	}
	downAfter, failoverTimeout := sentinel.DownAfter, sentinel.FailoverTimeout
	if downAfter == 0 {
		downAfter = 500 * time.Millisecond
	}
	if failoverTimeout == 0 {
		failoverTimeout = 2 * time.Second
	}
	host, port, _ := net.SplitHostPort(sentinel.Master)
	name := sentinel.MasterName
	milliseconds := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	args := []string{config, "--sentinel",
		"--bind", loopbackHost, "--port", strconv.Itoa(s.port),
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, logFileName),
		"--sentinel", "monitor", name, host, port, strconv.Itoa(sentinel.Quorum),
		"--sentinel", "down-after-milliseconds", name, milliseconds(downAfter),
		"--sentinel", "failover-timeout", name, milliseconds(failoverTimeout),
	}
	if password := s.opts.Password; password != "" {
		// The sentinels ask each other for it too.
		args = append(args, "--requirepass", password, "--sentinel", "sentinel-pass", password)
	}
	return args
}

// Follow makes the server a replica of master (REPLICAOF), now and after
// its restarts.
func (s *Server) Follow(t testing.TB, master *Server) {
	t.Helper()
	s.setReplicaOf(t, "127.0.0.1", strconv.Itoa(master.Port()))
}

// Promote makes the server a master (REPLICAOF NO ONE), now and after its
// restarts.
func (s *Server) Promote(t testing.TB) {
	t.Helper()
	s.setReplicaOf(t, "NO", "ONE")
}

// setReplicaOf sends REPLICAOF host port and keeps it, in place of any
// --replicaof of Options.ExtraArgs, for the restarts.
func (s *Server) setReplicaOf(t testing.TB, host, port string) {
	t.Helper()
	if reply := s.Do(t, "REPLICAOF", host, port); reply != "OK" && !strings.HasPrefix(reply, "OK") {
		t.Fatalf("redistest: %s: REPLICAOF %s %s: %s", s.Addr(), host, port, reply)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var args []string
	for i := 0; i < len(s.opts.ExtraArgs); i++ {
		if s.opts.ExtraArgs[i] == "--replicaof" && i+2 < len(s.opts.ExtraArgs) {
			i += 2
			continue
		}
		args = append(args, s.opts.ExtraArgs[i])
	}
	if host != "NO" {
		args = append(args, "--replicaof", host, port)
	}
	s.opts.ExtraArgs = args
}
