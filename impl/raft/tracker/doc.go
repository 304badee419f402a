// Package tracker keeps what a Raft node knows of the membership and of
// its peers, as etcd-io/raft's tracker/ (its design, not its code):
//
//   - Config: a configuration, its voters (a quorum.Majority), its learners
//     (members that receive the log but never vote nor count for commit)
//     and the ids removed from the cluster, which are never reused; and
//     the single-server changes between configurations (Config.Apply), a
//     decision table (docs/membership.md).
//   - Progress: a leader's record of one member's replication (match,
//     next, probe/replicate/snapshot, the inflight window).
//   - Tracker: the configuration in force, a Progress per member while
//     leading, and the votes of an election, tallied over the voters only.
//
// The package is pure: no I/O, no clock, no goroutine. impl/raft owns the
// rules of when a configuration is in force (from the append of its entry)
// and of when a change may be proposed.
package tracker
