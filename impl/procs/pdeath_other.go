//go:build !linux

package procs

import "syscall"

// sysProcAttr: a process group of its own (a Ctrl-C reaches the caller
// only, which stops the nodes in its own order).
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
