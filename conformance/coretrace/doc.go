// Package coretrace holds the protocol core (impl/raft) to the spec (spec/)
// run by run: every scenario script of impl/raft/testdata and every seeded
// randomized run of impl/raft/rafttest writes a trace, and spec.CheckTrace
// replays it; each test-only bug switch of the core must make a scenario
// fail while the spec with the same switch still accepts its trace; and the
// impl traces kept for TLC (tla/traces/impl/) are what the core writes
// today. A long run of 20,000 client writes with faults (make long-trace;
// 2,000 in make test) is traced to a file and checked as raftspec
// check-trace checks one. impl/ never imports spec/ (impl/raft's TestImplLayering): this is
// where they meet. It has tests only.
package coretrace
