//go:build linux

package main

import "syscall"

// sysProcAttr: SIGKILL when raftbench dies, so that no member outlives it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
