//go:build unix

package main

import (
	"os"
	"syscall"
)

// forwardedSignals are the signals that run passes on to its command.
var forwardedSignals = []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT}

// signalNumber returns the number of a signal, for the 128+N exit status.
func signalNumber(received os.Signal) int {
	if number, ok := received.(syscall.Signal); ok {
		return int(number)
	}
	return 0
}

// commandStatus returns a finished command's exit status as a shell
// reports it: its own, or 128+N when signal N killed it.
func commandStatus(state *os.ProcessState) int {
	if status, ok := state.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return exitSignalBase + int(status.Signal())
	}
	return state.ExitCode()
}

// forwardSignal reports whether run should pass a signal it received on to
// its command. The terminal sends SIGINT and SIGQUIT (Ctrl-C, Ctrl-\) to
// its whole foreground process group, command included: when redlock is in
// that group, the command got the signal already.
func forwardSignal(received os.Signal) bool {
	if received != syscall.SIGINT && received != syscall.SIGQUIT {
		return true
	}
	return !inTerminalForeground()
}

// pauseSignal and resumeSignal stop and continue a process.
var (
	pauseSignal  os.Signal = syscall.SIGSTOP
	resumeSignal os.Signal = syscall.SIGCONT
)
