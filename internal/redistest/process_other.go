//go:build unix && !linux

package redistest

import "syscall"

// processAttributes puts redis-server in its own process group. Outside
// Linux there is no parent-death signal: a crashed test may leave servers
// behind.
func processAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// processStopped cannot observe the process state outside Linux; it reports
// the state the caller waits for, so Stop and Cont return after signalling.
func processStopped(pid int) (bool, error) {
	return false, errStateUnknown
}
