package sim

import (
	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// CatalogueEntry is one row of the bug catalogue: a protocol bug known
// from the seeds or found by this suite, as test-only switches, and what
// the simulator must do with it.
type CatalogueEntry struct {
	// Name names the row (the switches, "+" between a combination's).
	Name string
	Bugs Bugs
	// Layer is where the bug lives: core, runtime, kv, service.
	Layer string
	// SeedsMax bounds the seeds (Default(1), Default(2), …) within which a
	// run must catch the bug; 0: the simulator is not expected to catch it
	// (Why says what does).
	SeedsMax uint64
	// By lists the checks that may catch it: prefixes of the violation
	// (an invariant's name, "Linearizability", "Trace", "AtMostOnce", …).
	By []string
	// Why: alone, or the combination docs/durable-raft.md (or
	// docs/runtime.md) names for a defence in depth.
	Why string
	// Pending: the feature is not built yet (the row is kept, marked).
	Pending string
	// Runs are the options of seed k (nil: Default(k)).
	Runs func(seed uint64) Options `json:"-"`
}

// Options are the options of the row's run for seed, its switches applied.
func (e *CatalogueEntry) Options(seed uint64) Options {
	o := Default(seed)
	if e.Runs != nil {
		o = e.Runs(seed)
	}
	e.Bugs.Apply(&o)
	return o
}

// Catalogue is the bug catalogue (docs/raftsim.md has it as a table,
// with the seeds each row took).
var Catalogue = []CatalogueEntry{
	{Name: "self-counts-appended", Layer: "core", Bugs: Bugs{Core: raft.BugSelfCountsAppended}, SeedsMax: 100,
		By: []string{"AckedDurable", "NoAckedLoss", "AckedPresent", "Linearizability", "RecoveryKeepsDurable"}, Why: "alone (the seed's bug-661: the leader counts itself at its last index)"},
	{Name: "follower-acks-appended", Layer: "core", Bugs: Bugs{Core: raft.BugFollowerAcksAppended}, SeedsMax: 100,
		By: []string{"AckedDurable", "NoAckedLoss", "AckedPresent", "Linearizability"}, Why: "alone"},
	{Name: "release-at-leader-commit", Layer: "core", Bugs: Bugs{Core: raft.BugReleaseAtLeaderCommit}, SeedsMax: 1000,
		By: []string{"AckedDurable", "NoAckedLoss", "AckedPresent", "Linearizability", "StateMachineSafety", "ByteIdentical", "Trace"}, Why: "alone (needs a corruption: bit flips at rest)"},
	{Name: "truncated-member-votes", Layer: "core", Bugs: Bugs{Core: raft.BugTruncatedMemberVotes}, SeedsMax: 300,
		By: []string{"AckedDurable", "NoAckedLoss", "AckedPresent", "Linearizability", "StateMachineSafety", "ByteIdentical", "ElectionSafety", "Trace"}, Why: "alone (needs a corruption)"},
	{Name: "candidate-advertises-learned+no-promotion-fence+learned-commit-unclamped", Layer: "core", Bugs: Bugs{Core: raft.BugCandidateAdvertisesLearned | raft.BugNoPromotionFence | raft.BugLearnedCommitUnclamped}, SeedsMax: 300,
		By: []string{"AckedDurable", "NoAckedLoss", "AckedPresent", "Linearizability", "StateMachineSafety", "ByteIdentical", "Trace"}, Why: "defence in depth: each alone is stopped by the other (docs/durable-raft.md); with the old unclamped learned commit, since a member learns a commit beyond its log only so (issue 10 item 5); without whole-cluster power losses: with them and PeerRepair the trace is checked only up to the first AMBIGUOUS boot, and no invariant catches it in 300 seeds",
		Runs: withoutClusterPowerLoss},
	{Name: "truncated-member-votes+no-promotion-fence", Layer: "core", Bugs: Bugs{Core: raft.BugTruncatedMemberVotes | raft.BugNoPromotionFence}, SeedsMax: 300,
		By: []string{"AckedDurable", "NoAckedLoss", "AckedPresent", "Linearizability", "StateMachineSafety", "ByteIdentical", "ElectionSafety", "Trace"}, Why: "no-promotion-fence's other combination (docs/durable-raft.md)"},
	{Name: "self-counts-appended+no-voter-learned-floor", Layer: "core", Bugs: Bugs{Core: raft.BugSelfCountsAppended | raft.BugNoVoterLearnedFloor}, SeedsMax: 100,
		By: []string{"AckedDurable", "NoAckedLoss", "AckedPresent", "Linearizability", "RecoveryKeepsDurable"}, Why: "no-voter-learned-floor is defence in depth behind self-counts-appended (docs/durable-raft.md: the lost write)"},
	{Name: "candidate-advertises-appended", Layer: "core", Bugs: Bugs{Core: raft.BugCandidateAdvertisesAppended},
		Why: "defence in depth with no combination known: the explorer finds none (docs/durable-raft.md); the simulator is not required to catch it"},
	{Name: "truncation-not-synced+advance-last-term", Layer: "runtime", Bugs: Bugs{Core: raft.BugTruncationNotSynced, Runtime: replica.BugAdvanceLastTerm},
		Why: "defence in depth twice over (docs/runtime.md): the explorer finds no violation with truncation-not-synced alone; with both, a progress report from before a truncation reaches the core only in impl/replica's TestStaleProgressAfterTruncation, which shows what it breaks"},
	{Name: "send-before-persist", Layer: "runtime", Bugs: Bugs{Runtime: replica.BugSendBeforePersist}, SeedsMax: 50,
		By: []string{"PersistBeforeSend"}, Why: "alone"},
	{Name: "mark-after-cut", Layer: "core", Bugs: Bugs{Core: raft.BugMarkAfterCut},
		Why: "the boot window (issue 10 item 3), a bug of the storage, not of the core: impl/wal's Open writes the TRUNCATED mark before the cut (TestTruncatedMarkDurableBeforeTheCut fails without it), so under the replica the switch changes nothing; the rafttest harness honours it (impl/raft testdata/boot_window.txt) and the spec's -bug mark-after-cut shows the lost write"},
	{Name: "lag-is-fence", Layer: "core", Bugs: Bugs{Core: raft.BugLagIsFence},
		Why: "reporting only, not safety: a follower's moment of replication lag reported as the fence of row 2 (an alert, FENCE SET, /readyz 503); impl/raft testdata/replication_lag.txt shows it and impl/server's TestTruncatedBootsFenced fails on healthy nodes with it; the simulator is not required to catch it"},
	{Name: "learned-commit-unclamped", Layer: "core", Bugs: Bugs{Core: raft.BugLearnedCommitUnclamped},
		Why: "liveness, not safety (issue 10 item 5): one bad LeaderCommit from a peer closes a member's fence and raises its voter floor for ever; the spec's raftspec liveness finds the stuck cluster (docs/durable-raft.md, \"LeaderCommit from a peer\") and impl/raft testdata/learned_commit_clamp.txt shows it; the simulator corrupts no leader commit and is not required to catch it"},
	{Name: "learned-commit-hard-state", Layer: "runtime", Bugs: Bugs{Runtime: replica.BugLearnedCommitHardState},
		Why: "a latency switch, not a safety one (the rule before issue 10: each learned commit written as hard state, inputs held): impl/replica's TestSlowSyncHeartbeatsOnTime and BenchmarkFollowerRound show what it costs; the simulator is not required to catch it"},
	{Name: "config-before-own-term-commit", Layer: "core", Bugs: Bugs{Core: raft.BugConfigBeforeOwnTermCommit},
		Why: "membership (issue 18): the simulator's randomized runs (Default) do not change membership, and the 2015 story needs two leaders each changing the configuration before its first commit, about 46 chosen steps; impl/raft testdata/config_2015.txt replays it in the core (NoAckedLoss with the switch, TestConfigBugSwitches), make reach's membership-2015 finds it in the spec, and TestSimulatedMembership runs the membership changes with every fix"},
	{Name: "config-while-uncommitted", Layer: "core", Bugs: Bugs{Core: raft.BugConfigWhileUncommitted},
		Why: "membership (issue 18): the simulator's randomized runs (Default) do not change membership; impl/raft testdata/config_one_at_a_time.txt shows the two promotions in a row and the write lost (NoAckedLoss with the switch, TestConfigBugSwitches), and TestSimulatedMembership runs the membership changes with every fix"},
	{Name: "ambiguous-tail-clean", Layer: "core", Bugs: Bugs{Core: raft.BugAmbiguousTailClean},
		Why: "the ambiguous tail (issue 10 item 2), a bug of the storage as much as of the core: impl/wal's Open writes the AMBIGUOUS mark before the cut (TestAmbiguousLastBatch), and the core's half keeps the mark it finds, so under the replica the switch changes nothing; the rafttest harness honours its storage half (impl/raft testdata/ambiguous_tail.txt: AckedDurable) and the spec's -bug ambiguous-tail-clean shows the lost write"},
	{Name: "truncated-withholds-vote", Layer: "core", Bugs: Bugs{Core: raft.BugTruncatedWithholdsVote}, SeedsMax: 80, By: []string{"Liveness"},
		Why: "liveness, not safety (issue 10 item 2): the rule before marked votes, a TRUNCATED member grants no vote; one TRUNCATED and one AMBIGUOUS member leave no quorum of unmarked grants and no unanimous election, and the cluster wedges (spec TestLivenessTruncatedAndAmbiguous; docs/durable-raft.md)"},
	{Name: "ambiguous-withholds-vote", Layer: "core", Bugs: Bugs{Core: raft.BugAmbiguousWithholdsVote},
		Why: "liveness, not safety (issue 10 item 2): an AMBIGUOUS member grants no vote, so after a whole-cluster power loss that tears a quorum's tails nobody is elected; raftspec liveness finds the wedge and impl/raft testdata/ambiguous_unanimous.txt shows it; the simulator's liveness check may catch it (a run that never elects again), but is not required to"},
	{Name: "repair-votes-early", Layer: "core", Bugs: Bugs{Core: raft.BugRepairVotesEarly}, SeedsMax: 100, Runs: RepairOptions,
		By:  []string{"NoAckedLoss", "AckedDurable", "AckedPresent", "Linearizability", "StateMachineSafety", "Trace"},
		Why: "repair from peers (issue 18, docs/repair.md), on RepairOptions' runs (four nodes, PeerRepair, two TRUNCATED at once); impl/raft testdata/repair/three_nodes_one_peer.txt loses a write with the switch (AckedDurable, TestRepairBugSwitches) and spec.TestRepairBugs finds RepairCovers broken"},
	{Name: "repair-ignores-term", Layer: "core", Bugs: Bugs{Core: raft.BugRepairIgnoresTerm}, Runs: RepairOptions,
		Why: "repair from peers (issue 18, docs/repair.md): on RepairOptions' runs its story (a leader answering a repair before its own fdatasync, then committing with the member's lost acknowledgment) did not come up in 150 seeds, and no core scenario stages it; spec.TestRepairBugs and TestRepairProductionBugs find RepairCovers broken at 2 servers"},
	{Name: "wiped-votes", Layer: "core", Bugs: Bugs{Core: raft.BugWipedVotes},
		Why: "wiped members (issue 18): the simulator's nodes confirm no first boot (no raft.Boot.FirstBoot) and its faults wipe no disk; impl/raft TestFirstBootWiped shows the wiped member voting with the switch, conformance/proc TestProcessWipedMember/bug in real processes, and spec/testdata/wipe/wiped-votes.txt the write lost (NoAckedLoss)"},
	{Name: "wipe-confirm-quorum", Layer: "core", Bugs: Bugs{Core: raft.BugWipeConfirmQuorum},
		Why: "wiped members (issue 18): the first design, a first boot confirmed by a quorum of the other voters; its failure needs five servers and a wiped member's vote for a candidate a quorum has not heard of (docs/membership.md, \"A wiped member\"); impl/raft TestFirstBootConfirmQuorum shows the switch confirming with a voter silent"},
	{Name: "no-chain-check", Layer: "runtime", Bugs: Bugs{Runtime: replica.BugNoChainCheck}, SeedsMax: 100,
		By: []string{"StateMachineSafety", "ByteIdentical", "ResultAgreement", "Trace", "AckedPresent", "AtMostOnce", "Linearizability"}, Why: "alone (an entry accepted without verifying its chain: wire flips)"},
	{Name: "session-dedup-off", Layer: "kv", Bugs: Bugs{KV: kv.BugNoDedup}, SeedsMax: 100,
		By: []string{"AtMostOnce", "Linearizability", "AckedPresent"}, Why: "alone (retries under the same request id)"},
	{Name: "stale-request-reexecutes", Layer: "kv", Bugs: Bugs{KV: kv.BugStaleReexecutes}, SeedsMax: 100,
		By: []string{"AtMostOnce", "Linearizability", "AckedPresent"}, Why: "alone (a delayed duplicate after the client moved on)"},
	{Name: "expired-session-reexecutes", Layer: "kv", Bugs: Bugs{KV: kv.BugExpiredReexecutes}, SeedsMax: 200,
		By: []string{"AtMostOnce", "Linearizability", "AckedPresent"}, Why: "alone (a retry after its session expired)"},
	{Name: "ack-before-commit", Layer: "service", Bugs: Bugs{Server: BugAckBeforeCommit}, SeedsMax: 50,
		By: []string{"AckedPresent", "AtMostOnce", "Linearizability"}, Why: "alone (a put answered once in the leader's log)"},
	{Name: "read-without-readindex", Layer: "service", Bugs: Bugs{Server: BugReadWithoutReadIndex}, SeedsMax: 200,
		By: []string{"Linearizability"}, Why: "alone (a deposed or new leader serves what it has applied)"},
	{Name: "snapshot-unverified", Layer: "runtime",
		Why: "a snapshot installed without verification", Pending: "snapshots (issue 11) are being built; the row gets its switch when they land"},
}

// withoutClusterPowerLoss is Default(seed) without whole-cluster power
// losses.
func withoutClusterPowerLoss(seed uint64) Options {
	o := Default(seed)
	o.Faults.ClusterPowerLoss = false
	return o
}
