// Package kvtest holds test utilities for impl/kv that the simulator
// (conformance/) reuses: a Recorder that keeps a replica's applied log with
// the answers its store gave, and CheckAtMostOnce, the applied-at-most-once
// checker.
//
// The checker trusts nothing the store does not show: it reads each entry's
// command and the result the store answered with, replays the writes the
// results claim were executed on a plain map of its own, and requires that
//
//   - every session request (session id, sequence number) was executed at
//     most once (a result whose Index is its own entry's index is an
//     execution; a retry answered from the session carries the index of
//     the first execution);
//   - every answer from the session is the first answer, byte for byte,
//     and comes from an execution of the same request;
//   - every executed write's answer is what the write does to the state the
//     earlier executions left (a CAS that says "mismatch" really mismatched);
//   - every answer a client received is that first answer or a refusal;
//   - and, given the final store, its state is exactly the state the claimed
//     executions leave: a store that re-executed a retry but answered it
//     from the session fails here.
//
// With the kv.BugNoDedup, kv.BugStaleReexecutes or kv.BugExpiredReexecutes
// switch on, a history with a retry fails the check (kvtest's tests show it).
package kvtest
