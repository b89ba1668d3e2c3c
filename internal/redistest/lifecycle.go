package redistest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// restartTimeout bounds how long Restart keeps trying when its port is
// still taken by another process.
const restartTimeout = 5 * time.Second

// restartRetryPeriod is the pause between Restart's attempts on a taken port.
const restartRetryPeriod = 50 * time.Millisecond

// Kill9 kills the server with SIGKILL and waits until the process is gone,
// like a machine losing power: nothing is flushed. Killing a server that is
// not running does nothing. With miniredis it skips the test.
func (s *Server) Kill9() {
	s.t.Helper()
	s.skipUnlessReal(s.t, "Kill9")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.proc.running() {
		return
	}
	if err := s.proc.kill(); err != nil {
		s.t.Fatalf("%v", err)
	}
}

// Stop pauses the server with SIGSTOP and returns once the process is
// stopped: connections stay open and requests go unanswered until Cont.
// With miniredis it skips the test.
func (s *Server) Stop() {
	s.t.Helper()
	s.skipUnlessReal(s.t, "Stop")
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.requireRunningLocked("Stop")
	if err := p.signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("redistest: SIGSTOP %s: %v", s.Addr(), err)
	}
	p.stopped = true
	if err := p.waitState(true); err != nil {
		s.t.Fatalf("%v", err)
	}
}

// Cont resumes a server paused by Stop with SIGCONT and returns once the
// process runs again. With miniredis it skips the test.
func (s *Server) Cont() {
	s.t.Helper()
	s.skipUnlessReal(s.t, "Cont")
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.requireRunningLocked("Cont")
	if err := p.signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("redistest: SIGCONT %s: %v", s.Addr(), err)
	}
	p.stopped = false
	if err := p.waitState(false); err != nil {
		s.t.Fatalf("%v", err)
	}
}

// Shutdown stops the server with SIGTERM, as an operator would, and waits
// until it has exited; a paused server is resumed first so that it can act
// on the signal. A server that does not exit in time is killed and the test
// is marked failed. Shutting down a server that is not running does nothing.
// With miniredis it skips the test.
func (s *Server) Shutdown() {
	s.t.Helper()
	s.skipUnlessReal(s.t, "Shutdown")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdownLocked(s.t)
}

// shutdownLocked implements Shutdown. Call with s.mu held.
func (s *Server) shutdownLocked(t testing.TB) {
	t.Helper()
	p := s.proc
	if !p.running() {
		return
	}
	if err := p.signal(syscall.SIGTERM); err != nil {
		t.Fatalf("redistest: SIGTERM %s: %v", s.Addr(), err)
	}
	if p.stopped {
		if err := p.signal(syscall.SIGCONT); err != nil {
			t.Fatalf("redistest: SIGCONT %s: %v", s.Addr(), err)
		}
		p.stopped = false
	}
	if p.waitExit(exitTimeout) {
		return
	}
	t.Errorf("redistest: %s did not exit %v after SIGTERM; killing it\n%s", s.Addr(), exitTimeout, s.LogTail(failureLogLines))
	if err := p.kill(); err != nil {
		t.Fatalf("%v", err)
	}
}

// Restart starts the server again on the same port, with the same data
// directory and options, and waits until it answers PING. A server that is
// still running is shut down first (SIGTERM). Whether data survives depends
// on Options.Persistence and on Wipe. With miniredis it skips the test.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.skipUnlessReal(t, "Restart")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdownLocked(t)
	deadline := time.Now().Add(restartTimeout)
	for {
		err := s.launchLocked()
		if err == nil {
			return
		}
		if !isAddressInUse(err) || time.Now().After(deadline) {
			t.Fatalf("redistest: restart redis-server on %s: %v", s.Addr(), err)
		}
		// Another process holds the port; nothing tells us when it lets go.
		time.Sleep(restartRetryPeriod)
	}
}

// Wipe deletes the contents of the data directory except the log, so that
// the next Restart starts empty even with persistence. The server must not
// be running. With miniredis it skips the test.
func (s *Server) Wipe() {
	s.t.Helper()
	s.skipUnlessReal(s.t, "Wipe")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc.running() {
		s.t.Fatalf("redistest: Wipe %s: the server is running; call Kill9 or Shutdown first", s.Addr())
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		s.t.Fatalf("redistest: Wipe %s: %v", s.Addr(), err)
	}
	for _, entry := range entries {
		if entry.Name() == logFileName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.dir, entry.Name())); err != nil {
			s.t.Fatalf("redistest: Wipe %s: %v", s.Addr(), err)
		}
	}
}

// cleanup kills the process if it still runs. It is registered with
// t.Cleanup and is safe after Kill9 or Shutdown.
func (s *Server) cleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.proc.running() {
		return
	}
	if err := s.proc.kill(); err != nil {
		s.t.Errorf("%v", err)
	}
}

// requireRunningLocked returns the running process or fails the test.
// Call with s.mu held.
func (s *Server) requireRunningLocked(method string) *process {
	s.t.Helper()
	if !s.proc.running() {
		s.t.Fatalf("redistest: %s %s: the server is not running", method, s.Addr())
	}
	return s.proc
}

// skipUnlessReal skips t when the server is miniredis.
func (s *Server) skipUnlessReal(t testing.TB, method string) {
	t.Helper()
	if s.mini != nil {
		t.Skipf("redistest: %s needs a redis-server process; this server is miniredis (%s=1 makes a missing redis-server a failure)", method, RequireRedisEnv)
	}
}
