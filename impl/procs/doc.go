// Package procs runs a cluster of raftd processes on loopback: start,
// SIGTERM (a clean stop), kill -9, SIGSTOP and SIGCONT, restart, and
// status over the HTTP API. `raftctl demo` (make run) and the real-process
// tests of conformance/proc use it. Every wait is bounded in time and
// polls a condition (a process's /healthz, a leader in /v1/status); no
// sleep stands in for one.
package procs
