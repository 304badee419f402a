// Package conformance will generate operation histories and fault schedules
// with pgregory.net/rapid, run them on a deterministic simulated cluster of
// impl/ nodes, and check every history for linearizability with porcupine
// and every trace for refinement of spec/.
//
// This is where impl/ and spec/ meet (impl/ never imports spec/). Built so
// far: package coretrace, which replays every trace of the protocol core's
// scenario scripts and randomized runs with spec.CheckTrace; package proc,
// the real-process tests of raftd (kill -9, SIGSTOP and restarts on a
// lossy disk, histories checked with porcupine; docs/raftd.md).
package conformance
