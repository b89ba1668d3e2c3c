package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// inTerminalForeground reports whether this process belongs to the
// foreground process group of its controlling terminal, which receives the
// signals typed at the terminal.
func inTerminalForeground() bool {
	terminal, err := os.Open("/dev/tty")
	if err != nil {
		return false // no controlling terminal
	}
	defer terminal.Close()
	foreground, err := unix.IoctlGetInt(int(terminal.Fd()), unix.TIOCGPGRP)
	return err == nil && foreground == unix.Getpgrp()
}
