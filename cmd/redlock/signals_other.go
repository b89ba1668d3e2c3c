//go:build !unix

package main

import "os"

// forwardedSignals are the signals that run passes on to its command.
var forwardedSignals = []os.Signal{os.Interrupt}

// signalNumber returns the number of a signal, for the 128+N exit status.
func signalNumber(os.Signal) int { return 2 }

// commandStatus returns a finished command's exit status.
func commandStatus(state *os.ProcessState) int { return state.ExitCode() }

// forwardSignal reports whether run should pass a signal on to its command.
func forwardSignal(os.Signal) bool { return true }

// pauseSignal and resumeSignal are nil where processes cannot be paused:
// the demo restarts nodes instead.
var pauseSignal, resumeSignal os.Signal
