// Package rafttest runs clusters of impl/raft nodes in memory, for scenario
// scripts, randomized runs and (later) the simulator.
//
// # What it simulates
//
// Each node has a simulated WAL ([SimWAL]): what was written is readable at
// once, as from a page cache, and becomes durable only when the test
// flushes it (all of it, or a prefix). A crash keeps the durable prefix and
// any number of the unsynced entries after it; a corruption cuts the log
// inside its durable prefix and boots the node with the TRUNCATED verdict;
// a hard-state loss boots it with zero or an older copy of its hard state
// and the WAL's sticky loss mark (Boot.HardStateLost).
// The network delivers, drops, duplicates and reorders messages, and can cut
// links. Everything comes from one seed: no goroutine, no clock, no sleep.
//
// # What it checks
//
// After every step: ElectionSafety, StateMachineSafety (every node applies
// the same entry at each index), AckedDurable (an acknowledged entry is
// durable on a majority, counting TRUNCATED members as the spec does),
// NoAckedLoss (a later leader holds it), and that a read answers at or after
// every entry acknowledged before it was asked. Every step of every node,
// and every step of the network, goes to one trace in the trace/ format,
// which spec.CheckTrace replays.
//
// # Driving it
//
// [Env.Handle] runs the commands of impl/raft/testdata/*.txt (one handler
// per command, each with an Example line, in the manner of etcd-io/raft's
// interaction tests) and [RunScript] a whole script; [RunRandom] runs a
// seeded randomized behaviour with every fault and then requires the
// cluster to recover. A trace checker enters as a function
// (ScriptOptions.CheckTrace, Env.CheckTrace).
package rafttest
