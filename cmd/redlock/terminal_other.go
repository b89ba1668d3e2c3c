//go:build !linux

package main

import "os"

// isTerminal reports whether f is a character device, the closest portable
// guess at a terminal.
func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// inTerminalForeground returns false where it cannot be told: signals are
// always passed on.
func inTerminalForeground() bool { return false }
