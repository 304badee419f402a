// Package kv is the replicated key-value state machine: a map from keys to
// values, each with a revision (the log index that last changed it), put,
// delete and compare-and-swap on value or on revision, and exactly-once
// client sessions (Raft dissertation §6.3). The same code runs under raftd
// and under the simulator, so what the simulator checks is what users get.
// docs/kv.md is the reference: formats as tables, the session decision
// table, the hash, the snapshot layout.
//
// # Shape
//
// A [Store] is pure: no I/O but the io.Writer and io.Reader of
// [Store.Snapshot] and [Store.Restore], no goroutine, no clock of its own,
// and no map iterated in an order that can reach a result, the hash or a
// snapshot. It changes only by [Store.Apply], which the replica runtime
// calls for every committed entry in order, and by Restore. Apply takes the
// entry's data, a [Command] encoded by [AppendCommand] (or nothing: the
// core's own no-op entries), and returns an encoded [Result] for the
// entry's proposer. [DecodeCommand] is strict: bytes that are not a valid
// command get a CodeBadCommand result and change nothing, the same on every
// replica. [Store.ApplyCommand] is the typed path, answering exactly as
// Apply of the encoding would.
//
// Reads do not go through the log: the runtime serves [Store.Get] once
// [Store.AppliedIndex] reaches the read index ReadIndex gave it.
//
// # Sessions
//
// A client registers a session through the log (its id is the register
// entry's index) and numbers its requests; each request carries the
// session id, its sequence number and the client's lowest unacknowledged
// sequence number. The store keeps the answer of every request of the
// window and drops those below it: a retry, in any order, gets its first
// answer and is never executed twice; a request below the window, or on an
// expired session, is refused, never re-executed. Sessions expire by the
// leader-stamped time in entries (Command.TimeMs), never a local clock. A
// write without a session is at-least-once: a client retry after a lost
// answer may apply it twice. The rows S1–S6 of the decision table are in
// session.go; [Bug] switches re-introduce what each rule prevents.
//
// # Hash and snapshots
//
// [Store.Hash] is a sum of XXH64 element hashes over every key,
// session, kept answer and the clock, kept incrementally; [Store.Verify]
// recomputes it from scratch and checks every invariant. Snapshots stream
// (a 64 KiB buffer and the sorted key list, never the whole snapshot in
// memory), are checksummed with CRC-32C and carry the hash; Restore builds
// the new state aside and refuses a damaged, truncated or inconsistent
// stream with [ErrBadSnapshot], leaving the store unchanged.
//
// # Tests
//
// rapid_test.go checks the store against a plain map model (1,000 rapid
// checks in go test, Verify after every step); retry_test.go applies
// pipelined retries in every order with a snapshot and a restore at every
// position; package kvtest holds the applied-at-most-once checker the
// simulator reuses, and its tests show it fails with each Bug switch on.
// The decoders and Restore have fuzz targets whose corpus runs in go test.
package kv
