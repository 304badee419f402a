// Package proc holds the real-process tests of raftd (its _test files):
// three raftd processes on loopback, on the lossy test file system
// (impl/lossyfs: kill -9 loses every unsynced write, as a power loss
// would), concurrent clients through the Go client, and a fault schedule
// of kill -9 (the leader, a follower, the leader with a follower, the
// whole cluster), SIGSTOP pauses and restarts. A run passes when every
// acknowledged write is present at the end, every node reaches the same
// state hash, and porcupine finds the history linearizable (unknown
// outcomes never return; a porcupine timeout fails the run). On failure the
// history's HTML visualization and the nodes' logs are kept and named.
//
// The same run is required to fail with the core's follower-acks-appended
// switch, and with self-counts-appended together with
// no-voter-learned-floor (docs/raftd.md says how reliably). A run with a
// large --wal-sync-ms kills durable contributors inside the group-commit
// window. Every run traces: each node writes its trace with raftd --trace,
// every line stamped with its Lamport clock (resumed across restarts), and
// after the run the per-node files are merged by clock and the whole run
// is checked against the spec (tracecheck_test.go). docs/raftd.md,
// "Real-process tests" and "Traces of a real cluster".
package proc
