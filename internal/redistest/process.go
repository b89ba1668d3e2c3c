package redistest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Timeouts of process management. Generous: a loaded CI machine running the
// race detector is slow, and a failure here should mean a broken server.
const (
	readyTimeout     = 10 * time.Second
	readyPollPeriod  = 10 * time.Millisecond
	pingTimeout      = 500 * time.Millisecond
	exitTimeout      = 10 * time.Second
	stateTimeout     = 5 * time.Second
	statePollPeriod  = time.Millisecond
	failureLogLines  = 30
	stderrFileName   = "redis.stderr"
	addressInUseText = "Address already in use"
)

// process is one run of redis-server.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed by the waiting goroutine once cmd.Wait returns
	// waitErr is cmd.Wait's result. The waiting goroutine writes it before
	// closing exited; read it only after exited is closed.
	waitErr error
	// stopped is true between Stop and Cont. Guarded by Server.mu.
	stopped bool
}

// running reports whether p has been started and has not exited yet. It is
// safe on a nil process.
func (p *process) running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the process; a process that already exited is not an
// error. os.Process tracks its pid, so a reused pid is never signalled.
func (p *process) signal(sig syscall.Signal) error {
	err := p.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// waitExit waits until the process has exited and been reaped.
func (p *process) waitExit(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		return true
	case <-timer.C:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be reaped.
func (p *process) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("redistest: SIGKILL pid %d: %w", p.cmd.Process.Pid, err)
	}
	if !p.waitExit(exitTimeout) {
		return fmt.Errorf("redistest: pid %d did not exit %v after SIGKILL", p.cmd.Process.Pid, exitTimeout)
	}
	return nil
}

// waitState waits until the process is stopped (or running again).
func (p *process) waitState(stopped bool) error {
	deadline := time.Now().Add(stateTimeout)
	for {
		state, err := processStopped(p.cmd.Process.Pid)
		switch {
		case errors.Is(err, errStateUnknown):
			return nil
		case err != nil:
			return err
		case state == stopped:
			return nil
		case !p.running():
			return fmt.Errorf("redistest: pid %d exited", p.cmd.Process.Pid)
		case time.Now().After(deadline):
			return fmt.Errorf("redistest: pid %d did not change state (stopped=%v) within %v", p.cmd.Process.Pid, stopped, stateTimeout)
		}
		// The kernel offers no notification for a stop of a child another
		// goroutine is already waiting for; poll its state briefly.
		time.Sleep(statePollPeriod)
	}
}

// arguments returns the redis-server command line for s.
func (s *Server) arguments() []string {
	if s.opts.Sentinel != nil {
		return s.sentinelArguments()
	}
	port := strconv.Itoa(s.port)
	args := []string{"--bind", loopbackHost}
	if s.certs != nil {
		args = append(args,
			"--port", "0",
			"--tls-port", port,
			"--tls-cert-file", s.certs.certFile,
			"--tls-key-file", s.certs.keyFile,
			"--tls-ca-cert-file", s.certs.caFile,
			"--tls-auth-clients", "no",
		)
	} else {
		args = append(args, "--port", port)
	}
	args = append(args,
		"--save", "",
		"--dir", s.dir,
		"--logfile", filepath.Join(s.dir, logFileName),
	)
	switch s.opts.Persistence {
	case PersistenceAOF:
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	default:
		args = append(args, "--appendonly", "no")
	}
	if s.opts.DisableDebugCommand {
		args = append(args, "--enable-debug-command", "no")
	} else {
		args = append(args, "--enable-debug-command", "local")
	}
	if s.opts.Password != "" {
		args = append(args, "--requirepass", s.opts.Password)
	}
	for _, user := range s.users {
		args = append(args, "--user", user.name)
		args = append(args, user.rules...)
	}
	return append(args, s.opts.ExtraArgs...)
}

// launchLocked starts redis-server on s.port and waits until it answers
// PING. On failure the process is gone and the error carries the log tail;
// it matches errAddressInUse when the port was taken. Call with s.mu held.
func (s *Server) launchLocked() error {
	logPath := filepath.Join(s.dir, logFileName)
	logStart := int64(0)
	if info, err := os.Stat(logPath); err == nil {
		logStart = info.Size()
	}
	stderr, err := os.OpenFile(filepath.Join(s.stateDir, stderrFileName), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("redistest: create stderr file: %w", err)
	}
	defer stderr.Close()

	cmd := exec.Command(s.binary, s.arguments()...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), s.opts.Env...)
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	cmd.SysProcAttr = processAttributes()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: run %s: %w", s.binary, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	s.proc = p

	err = s.waitReady(p)
	if err == nil {
		return nil
	}
	if killErr := p.kill(); killErr != nil {
		err = errors.Join(err, killErr)
	}
	newLog := readFileQuietly(logPath)
	if int64(len(newLog)) >= logStart {
		newLog = newLog[logStart:]
	}
	output := readFileQuietly(filepath.Join(s.stateDir, stderrFileName))
	if strings.Contains(string(newLog), addressInUseText) || strings.Contains(string(output), addressInUseText) {
		err = fmt.Errorf("%w: %w", errAddressInUse, err)
	}
	return fmt.Errorf("%w\n--- output ---\n%s\n--- last lines of %s ---\n%s",
		err, lastLines(output, failureLogLines), logPath, lastLines(newLog, failureLogLines))
}

// waitReady polls PING until the server answers PONG and INFO shows the
// pid of p, the process exits or readyTimeout passes. -LOADING and
// connection errors mean "not yet".
func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(readyTimeout)
	ticker := time.NewTicker(readyPollPeriod)
	defer ticker.Stop()
	var last string
	for {
		reply, err := roundTrip(s.Addr(), s.TLSConfig(), s.opts.Password, pingTimeout, "PING")
		if err == nil && reply == "PONG" {
			// Make sure the PONG came from our process and not from a
			// server that took the port before ours could bind it.
			reply, err = roundTrip(s.Addr(), s.TLSConfig(), s.opts.Password, pingTimeout, "INFO", "server")
			if err == nil && strings.Contains(reply, fmt.Sprintf("\r\nprocess_id:%d\r\n", p.cmd.Process.Pid)) {
				return nil
			}
		}
		switch {
		case err != nil:
			last = err.Error()
		default:
			last = lastLines([]byte(reply), 1)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w within %v (last PING: %s)", errNotReady, readyTimeout, last)
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%w (%v)", errExited, p.waitErr)
		case <-ticker.C:
		}
	}
}

// isAddressInUse reports whether a start failed because the port was taken.
func isAddressInUse(err error) bool {
	return errors.Is(err, errAddressInUse)
}
