// Package conformance will generate operation histories and fault schedules
// with pgregory.net/rapid, run them on a deterministic simulated cluster of
// impl/ nodes, and check every history for linearizability with porcupine
// and every trace for refinement of spec/.
//
// Nothing is built here yet: it depends on impl/raft and impl/wal.
package conformance
