package main

import "syscall"

// childAttributes makes the kernel send SIGTERM to run's command when
// redlock dies, so that it does not go on without the lock being renewed.
func childAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// serverAttributes puts a redis-server started by bench or demo in its own
// process group, out of reach of the terminal's Ctrl-C, and has the kernel
// kill it if redlock dies before it could stop it.
func serverAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
