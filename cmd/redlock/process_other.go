//go:build !linux

package main

import "syscall"

// childAttributes returns nil: only Linux offers a parent-death signal.
func childAttributes() *syscall.SysProcAttr { return nil }

// serverAttributes returns nil: only Linux offers a parent-death signal.
func serverAttributes() *syscall.SysProcAttr { return nil }
