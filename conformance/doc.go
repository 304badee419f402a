// Package conformance is where impl/ and spec/ meet (impl/ never imports
// spec/). Its tests run package sim, the deterministic simulator of whole
// replicas (the replica runtime in stepped mode with the KV store, the real
// WAL on in-memory disks, clients with sessions, every fault): 200 seeds
// with every check on every seed (invariants, liveness after healing,
// at-most-once, durability, porcupine on the client history, the spec's
// trace checker), a rapid state-machine property that generates the
// operations and the fault schedule and shrinks a failing case, the bug
// catalogue (each switch caught within its bound of seeds), the coverage
// marks of impl/ (each hit), and determinism across processes
// (docs/raftsim.md; cmd/raftsim runs many seeds). Package coretrace
// replays every trace of the protocol core's scenario scripts and
// randomized runs with spec.CheckTrace; package proc runs raftd processes
// under kill -9, SIGSTOP and restarts on a lossy disk and checks their
// histories with porcupine (docs/raftd.md).
package conformance
