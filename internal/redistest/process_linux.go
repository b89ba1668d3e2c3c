//go:build linux

package redistest

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

// processAttributes puts redis-server in its own process group and has the
// kernel kill it when the test process dies.
func processAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// processStopped reports whether the process with this pid is stopped by a
// signal, from the state field of /proc/PID/stat.
func processStopped(pid int) (bool, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false, fmt.Errorf("redistest: read process state: %w", err)
	}
	// The command name in parentheses may hold anything; the state is the
	// first field after the last closing parenthesis.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 || end+2 >= len(stat) {
		return false, fmt.Errorf("redistest: unexpected /proc/%d/stat: %q", pid, stat)
	}
	return stat[end+2] == 'T', nil
}
