//go:build linux

package procs

import "syscall"

// sysProcAttr: a process group of its own (a Ctrl-C reaches the caller
// only, which stops the nodes in its own order), and SIGKILL when the
// caller dies, so that no node outlives the test or demo that started it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
