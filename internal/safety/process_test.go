//go:build linux

package safety_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/safety"
)

// workerEnv carries a workerConfig, as JSON, to a worker process: the test
// binary run again with -test.run=^TestSafetyWorker$.
const workerEnv = "LOCKMUX_SAFETY_WORKER"

// TestSafetyWorker is the body of a worker process of the chaos run and
// of D3. Run directly, it skips.
func TestSafetyWorker(t *testing.T) {
	raw := os.Getenv(workerEnv)
	if raw == "" {
		t.Skip("runs only as a worker process of the safety tests, started with " + workerEnv)
	}
	var config workerConfig
	require.NoError(t, json.Unmarshal([]byte(raw), &config))
	sink, err := safety.Dial(config.Socket)
	require.NoError(t, err)
	defer sink.Close()
	ctx, cancel := context.WithTimeout(context.Background(), config.Lifetime)
	defer cancel()
	err = runWorkers(ctx, config, sink, nil)
	if err != nil && !isClosedRecorder(err) {
		t.Fatalf("worker process %s: %v", config.Name, err)
	}
}

// workerProcess is a worker process started by startWorkerProcess.
type workerProcess struct {
	name   string
	cmd    *exec.Cmd
	output string
	exited chan struct{}
	err    error // cmd.Wait's result; read after exited is closed
}

// startWorkerProcess runs the test binary again as a worker process with
// config. It dies with the test binary (parent-death signal), and is
// killed, by its pid, when the test ends if it still runs.
func startWorkerProcess(t testing.TB, config workerConfig) *workerProcess {
	t.Helper()
	config.Remote = true
	raw, err := json.Marshal(config)
	require.NoError(t, err)
	p := &workerProcess{name: config.Name, output: filepath.Join(t.TempDir(), config.Name+".log"), exited: make(chan struct{})}
	output, err := os.Create(p.output)
	require.NoError(t, err)
	defer output.Close()
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestSafetyWorker$", "-test.count=1", "-test.v")
	p.cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	p.cmd.Stdout, p.cmd.Stderr = output, output
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// signal sends sig to the process and, for SIGSTOP and SIGCONT, waits
// until the kernel shows the new state.
func (p *workerProcess) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("worker %s: %v: %w", p.name, sig, err)
	}
	want := sig == syscall.SIGSTOP
	for range 1000 {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			return nil // gone
		}
		// The state follows the command name, which is in parentheses.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 0 && (fields[0] == "T" || fields[0] == "t") == want {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("worker %s did not change state after %v", p.name, sig)
}

// wait waits for the process to exit, killing it after timeout, and
// returns an error that names its log when it failed.
func (p *workerProcess) wait(timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("worker %s did not exit within %v; killed (log %s)", p.name, timeout, p.output)
	}
	if p.err != nil {
		log, _ := os.ReadFile(p.output)
		return errors.Join(fmt.Errorf("worker %s: %w", p.name, p.err), errors.New(lastLines(string(log), 30)))
	}
	return nil
}

// lastLines returns the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
