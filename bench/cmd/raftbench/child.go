package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// child is a process raftbench started (an etcd member, the no-op server).
type child struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

func startChild(name, logPath, bin string, args ...string) (*child, error) {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, exited: make(chan struct{}), log: f}
	go func() { _ = cmd.Wait(); f.Close(); close(c.exited) }()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and, after 10 s, SIGKILL; it returns once the process
// is gone.
func (c *child) stop() {
	if !c.running() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// waitTCP waits until addr accepts a connection or c exits.
func waitTCP(c *child, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if !c.running() {
			return fmt.Errorf("%s exited (its log: %s)", c.name, c.log.Name())
		}
		if cn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			cn.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond) // polling a port that is not up yet: nothing to wait on
	}
	return fmt.Errorf("%s: %s not accepting within %v", c.name, addr, limit)
}
