package replica

import (
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
)

// Bug is a set of test-only switches that re-introduce failures the
// runtime's rules prevent. Each must be caught by the randomized runs
// (conformance/): a cluster invariant breaks or the trace is rejected by
// the spec with every fix on (but BugLearnedCommitHardState, a latency
// switch, caught by a stepped test of its own).
type Bug uint8

const (
	// BugSendBeforePersist: MessagesAfterPersist leave at once, before the
	// hard state they depend on is durable (a vote granted, then lost in a
	// crash, then granted again to another candidate).
	BugSendBeforePersist Bug = 1 << iota
	// BugAdvanceLastTerm: Advance reports the durable index with the term
	// of the last appended entry instead of the durable entry's, so a
	// progress report from before a truncation passes the core's check.
	// Defence in depth: the truncation's sync holds inputs until progress
	// covers it, so a report from before it never reaches Advance; with
	// raft.BugTruncationNotSynced (which the replica honours by not
	// holding) it does.
	BugAdvanceLastTerm
	// BugNoChainCheck: an AppendEntries is accepted without verifying its
	// records and their hash chain (entries are re-encoded locally).
	BugNoChainCheck
	// BugLearnedCommitHardState: every change of the core's learned commit
	// (Ready.LearnedCommit) is written as hard state and holds inputs until
	// it is durable, as the rule was before issue 10: safe, but a follower's
	// round costs a second fdatasync, and on a slow disk its heartbeats and
	// read rounds wait behind it until the leader's check-quorum gives up
	// (TestSlowSyncHeartbeatsOnTime shows it). Not an invariant the
	// randomized runs can catch: a liveness and latency switch.
	BugLearnedCommitHardState
	bugEnd
)

var bugNames = map[Bug]string{
	BugSendBeforePersist:      "send-before-persist",
	BugAdvanceLastTerm:        "advance-last-term",
	BugNoChainCheck:           "no-chain-check",
	BugLearnedCommitHardState: "learned-commit-hard-state",
}

func (b Bug) String() string {
	var names []string
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		if b&bit != 0 {
			names = append(names, bugNames[bit])
		}
	}
	return strings.Join(names, ",")
}

// AllBugs lists every switch.
func AllBugs() []Bug {
	var out []Bug
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		out = append(out, bit)
	}
	return out
}

// Stats are a replica's counters since boot. Safe to read from any
// goroutine.
type Stats struct {
	Events, MessagesReceived, MessagesSent, MessagesDropped, MessagesInvalid       atomic.Uint64
	RecordsRefused, ChainMismatches, LocalCorruptions, RecordsAppendedShipped      atomic.Uint64
	Proposals, ProposalBatches, ProposalsRefused, ProposalsLost, Reads, ReadRounds atomic.Uint64
	Holds, TruncationSyncs, WALFailures, Alerts, LeaderElections, ReadiesEmpty     atomic.Uint64
	Applied                                                                        atomic.Uint64
	// Campaigns counts the elections this replica started (became a
	// candidate); LeaderElections the ones it won.
	Campaigns atomic.Uint64
	// MembershipChanges counts the changes of the configuration in force.
	MembershipChanges atomic.Uint64
	// VotesGranted counts the granted vote responses sent (MsgVoteResp;
	// pre-votes not counted): a wiped member's stays 0 (firstboot.go).
	VotesGranted atomic.Uint64
}

// Stats returns the replica's counters.
func (r *Replica) Stats() *Stats { return &r.stats }

// Status is what an operator needs to know about a replica: the core's
// status (role, term, fence and why), the WAL's progress, and whether the
// replica is holding inputs back for the disk.
type Status struct {
	raft.Status
	WAL          wal.Progress
	Holding      bool
	Queued       int
	Pending      int // proposals not yet answered
	AppliedIndex uint64
	// Failure says why the replica acknowledges nothing (its WAL failed, or
	// a submission the core counted on was refused); empty when healthy.
	Failure string
	// StepLost: the failure came while a step of the core was not yet
	// durable (see Replica.stepLost).
	StepLost bool
	// Snapshot is the newest durable snapshot (zero without one);
	// Snapshots its counters.
	Snapshot  raft.SnapshotInfo
	Snapshots SnapshotStats
	// SnapshotBoot is the row of the boot with snapshots (snapboot.go).
	SnapshotBoot string
}

// Status returns the replica's status. Call it on the replica's goroutine
// (Run offers a goroutine-safe form).
func (r *Replica) Status() Status {
	st := Status{Status: r.node.Status(), WAL: r.progress, Holding: r.holdTicket != 0, Queued: len(r.queue),
		Pending: len(r.proposals), AppliedIndex: r.applied}
	if r.failErr != nil {
		st.Failure = r.failErr.Error()
	}
	st.StepLost = r.stepLost
	if r.snaps != nil {
		st.Snapshot, st.Snapshots, st.SnapshotBoot = r.snaps.cur.info(), r.snaps.stats, r.snaps.bootRow
	}
	return st
}

// alertLimiter rate-limits repeated log lines of one kind: the first is
// logged, then at most one in every alertEvery, with the count suppressed.
type alertLimiter struct {
	seen map[string]uint64
}

const alertEvery = 64

func (a *alertLimiter) init() { a.seen = map[string]uint64{} }

func (a *alertLimiter) log(l *slog.Logger, kind, msg string, args ...any) {
	n := a.seen[kind]
	a.seen[kind] = n + 1
	if n%alertEvery != 0 {
		return
	}
	if n > 0 {
		args = append(args, "repeated", n)
	}
	l.Warn(msg, args...)
}

// Leadership returns the role, term and known leader as of the last Ready,
// without the cost of Status.
func (r *Replica) Leadership() (role raft.Role, term uint64, lead raft.NodeID) {
	return r.role, r.term, r.lead
}
