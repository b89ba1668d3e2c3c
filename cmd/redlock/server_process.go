package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Timeouts of the redis-server processes.
const (
	serverReadyTimeout = 10 * time.Second
	serverExitTimeout  = 5 * time.Second
	pingTimeout        = 200 * time.Millisecond
	portAttempts       = 5
)

// processServer is a redis-server process on a loopback port, with a
// temporary directory of its own. Only its own pid is ever signalled.
type processServer struct {
	binary     string
	address    string
	directory  string
	persistent bool

	mu      sync.Mutex
	current *serverProcess // nil when not running
	paused  bool
	wiped   bool // its data was removed since it last ran
}

// serverProcess is one run of redis-server.
type serverProcess struct {
	command *exec.Cmd
	exited  chan struct{} // closed once the process has been reaped
}

func startProcessServer(ctx context.Context, binary string, persistent bool) (*processServer, error) {
	directory, err := os.MkdirTemp("", "redlock-server-")
	if err != nil {
		return nil, fmt.Errorf("create a directory for redis-server: %w", err)
	}
	s := &processServer{binary: binary, directory: directory, persistent: persistent}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err == nil {
			s.address = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			err = s.launch(ctx)
		}
		if err == nil {
			return s, nil
		}
		if attempt == portAttempts || !strings.Contains(err.Error(), "Address already in use") {
			os.RemoveAll(directory)
			return nil, err
		}
	}
}

// arguments returns the command line of the server.
func (s *processServer) arguments() []string {
	_, port, _ := net.SplitHostPort(s.address)
	arguments := []string{"--bind", "127.0.0.1", "--port", port, "--dir", s.directory,
		"--logfile", filepath.Join(s.directory, "redis.log"), "--save", "", "--daemonize", "no"}
	if s.persistent {
		return append(arguments, "--appendonly", "yes", "--appendfsync", "always")
	}
	return append(arguments, "--appendonly", "no")
}

// launch starts the process and waits until it answers PING.
func (s *processServer) launch(ctx context.Context) error {
	command := exec.Command(s.binary, s.arguments()...)
	command.Dir = s.directory
	command.SysProcAttr = serverAttributes()
	output, err := os.Create(filepath.Join(s.directory, "redis.output"))
	if err != nil {
		return fmt.Errorf("redis-server output: %w", err)
	}
	defer output.Close()
	command.Stdout, command.Stderr = output, output
	if err := command.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.binary, err)
	}
	process := &serverProcess{command: command, exited: make(chan struct{})}
	go func() {
		command.Wait()
		close(process.exited)
	}()
	s.mu.Lock()
	s.current, s.paused = process, false
	s.mu.Unlock()

	deadline := time.Now().Add(serverReadyTimeout)
	for !ping(s.address, pingTimeout) {
		select {
		case <-process.exited:
			return fmt.Errorf("redis-server on %s exited at start: %s", s.address, s.logTail())
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("redis-server on %s did not answer within %v: %s", s.address, serverReadyTimeout, s.logTail())
		}
	}
	return nil
}

// logTail returns the last lines the server wrote.
func (s *processServer) logTail() string {
	var text []string
	for _, name := range []string{"redis.output", "redis.log"} {
		content, _ := os.ReadFile(filepath.Join(s.directory, name))
		lines := strings.Split(strings.TrimSpace(string(content)), "\n")
		text = append(text, lines[max(0, len(lines)-5):]...)
	}
	return strings.Join(text, " | ")
}

func (s *processServer) Address() string { return s.address }

// signal sends a signal to the running process.
func (s *processServer) signal(signal os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return fmt.Errorf("redis-server on %s is not running", s.address)
	}
	return s.current.command.Process.Signal(signal)
}

func (s *processServer) Stop() (string, error) {
	if pauseSignal == nil {
		return s.Crash()
	}
	if err := s.signal(pauseSignal); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.paused = true
	s.mu.Unlock()
	return "paused (SIGSTOP)", nil
}

func (s *processServer) Crash() (string, error) {
	if err := s.kill(); err != nil {
		return "", err
	}
	return "killed (SIGKILL)", nil
}

func (s *processServer) Wipe() (string, error) {
	if err := s.kill(); err != nil {
		return "", err
	}
	for _, data := range []string{"appendonlydir", "dump.rdb"} {
		if err := os.RemoveAll(filepath.Join(s.directory, data)); err != nil {
			return "", fmt.Errorf("remove the data of redis-server at %s: %w", s.address, err)
		}
	}
	s.mu.Lock()
	s.wiped = true
	s.mu.Unlock()
	return "killed (SIGKILL) and its data removed", nil
}

// kill sends SIGKILL and waits for the process to be reaped.
func (s *processServer) kill() error {
	s.mu.Lock()
	process := s.current
	s.current = nil
	s.mu.Unlock()
	if process == nil {
		return nil
	}
	if err := process.command.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill redis-server pid %d: %w", process.command.Process.Pid, err)
	}
	select {
	case <-process.exited:
		return nil
	case <-time.After(serverExitTimeout):
		return fmt.Errorf("redis-server pid %d did not exit after SIGKILL", process.command.Process.Pid)
	}
}

func (s *processServer) Recover() (string, error) {
	s.mu.Lock()
	running, paused := s.current != nil, s.paused
	s.mu.Unlock()
	if running && paused {
		if err := s.signal(resumeSignal); err != nil {
			return "", err
		}
		s.mu.Lock()
		s.paused = false
		s.mu.Unlock()
		return "resumed (SIGCONT)", nil
	}
	if running {
		return "running", nil
	}
	if err := s.launch(context.Background()); err != nil {
		return "", err
	}
	s.mu.Lock()
	wiped := s.wiped
	s.wiped = false
	s.mu.Unlock()
	if wiped {
		return "restarted empty, as after a restart without persistence", nil
	}
	if s.persistent {
		return "restarted, its locks reloaded from the append-only file", nil
	}
	return "restarted empty", nil
}

// Close stops the process (SIGTERM, then SIGKILL if it lingers) and removes
// its directory.
func (s *processServer) Close() error {
	s.mu.Lock()
	process, paused := s.current, s.paused
	s.current = nil
	s.mu.Unlock()
	var err error
	if process != nil {
		if paused && resumeSignal != nil {
			process.command.Process.Signal(resumeSignal)
		}
		process.command.Process.Signal(syscall.SIGTERM)
		select {
		case <-process.exited:
		case <-time.After(serverExitTimeout):
			process.command.Process.Kill()
			<-process.exited
		}
	}
	return errors.Join(err, os.RemoveAll(s.directory))
}
