// Package replica is the replica runtime: the one loop that drives the
// protocol core (impl/raft) over the WAL (impl/wal), with a state machine
// and a transport. It decides when hard state is durable, when a message
// may leave, and when an acknowledgment is true, so it is the most
// safety-critical code of the project, and there is exactly one of it: the
// server (cmd/raftd), the simulator (conformance/) and the tests all run
// this package.
//
// # One code path, two ways to run it
//
// A [Replica] is one function, [Replica.Handle], taking an [Event]: a
// message, a tick, proposals, reads, a WAL step completed. Production runs
// it with a [Runner]: one goroutine feeds Handle from an inbox, a ticker
// and the WAL's notifications, while the WAL's own goroutines do the I/O.
// Stepped mode runs it with no goroutine at all: the WAL is opened with
// wal.Options.Stepped on an in-memory disk, and the caller (a simulator)
// performs every WAL step and every delivery at virtual times of its
// choosing, then calls Handle. The protocol logic does not fork between the
// modes; a seed replays a stepped run byte for byte.
//
// # The Ready contract
//
// processReady carries out the core's Ready exactly as docs/refinement.md
// ("What the driver must do") requires: hard state durable before the
// messages that depend on it leave and before the next input; a suffix
// truncation durable before the next input; entries in the WAL before the
// next input; Advance from the WAL's durable index with that entry's term.
// "Before the next input" means the replica holds its inputs back until a
// WAL progress report covers the submission; nothing blocks.
//
// # Verified shipping
//
// An AppendEntries travels with the leader's WAL records of its entries,
// byte for byte, and the leader's chain value at PrevLogIndex (seeds 002
// and 004). A follower verifies every record, the chain through the
// message, and the chain against its own log wherever the terms say the
// logs agree, before the core sees the message; it appends the records it
// verified, so the bytes on its disk are the leader's. A refusal is counted
// and reported (rate-limited), never a crash and never an accepted entry.
//
// # Tests
//
// The randomized whole-cluster runs are in conformance/ (they check every
// trace against spec/, which impl/ may not import); this package's own
// tests drive single replicas step by step.
package replica
