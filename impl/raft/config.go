package raft

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Rand is the injected source of randomness (randomized election
// timeouts). A seeded source replays a run exactly.
type Rand interface {
	// Uint64N returns a uniform number in [0, n), n > 0.
	Uint64N(n uint64) uint64
}

// Config configures a node. Zero values of the optional fields take the
// defaults of withDefaults.
type Config struct {
	ID NodeID
	// Voters is the cluster's initial configuration: the voters of an
	// empty log (docs/membership.md). Once the log (or a snapshot,
	// Boot.Membership) holds a configuration entry, the latest one is in
	// force instead. ID is one of them unless Joining.
	Voters []NodeID
	// Joining: this node is not an initial voter; it joins a running
	// cluster once a leader adds it as a learner (ChangeConfig), and never
	// campaigns before its log makes it a voter.
	Joining bool
	// AutoPromote is an operator's policy: while this node leads, it
	// promotes a learner as soon as the learner has caught up (its
	// acknowledged match covers the commit index) and ChangeConfig would
	// take the promotion; off, learners are promoted on request only.
	AutoPromote bool

	// ElectionTick is the election timeout in ticks: a follower that hears
	// from no leader for a random time in [ElectionTick, 2*ElectionTick)
	// starts an election. HeartbeatTick is the leader's heartbeat interval.
	ElectionTick, HeartbeatTick int
	Rand                        Rand

	// PreVote: a node first asks whether it could win before raising its
	// term, so that a partitioned node does not disrupt the cluster when it
	// returns. CheckQuorum: a leader that hears from no quorum for an
	// election timeout steps down, and a follower that hears from a leader
	// ignores vote requests for the next election timeout (its lease).
	PreVote, CheckQuorum bool
	// LeaseRead answers ReadIndex from the leader's lease without a
	// heartbeat round. It relies on clocks: see read.go. Needs CheckQuorum.
	LeaseRead bool

	// Replication limits: entries and data bytes per AppendEntries this node
	// sends (at most WireEntriesMax and WireBytesMax; what it accepts is
	// bounded by those, never by these, so members may differ), and
	// AppendEntries in flight per follower (count and bytes).
	MsgEntriesMax    int
	MsgBytesMax      uint64
	InflightMsgsMax  int
	InflightBytesMax uint64
	// EntryBytesMax bounds one proposal to this node (an entry replicated
	// from a leader is bounded by WireBytesMax); UncommittedBytesMax bounds the data
	// proposed but not yet committed (proposals beyond it are dropped).
	EntryBytesMax       uint64
	UncommittedBytesMax uint64
	// CacheBytesMax bounds the entries kept in memory after they were
	// handed to the WAL; older ones are read back through Storage.
	CacheBytesMax uint64
	// ApplyBytesMax bounds the committed entries of one Ready.
	ApplyBytesMax uint64
	// PendingAcksMax bounds the AppendEntries a follower keeps waiting for
	// durability before it acknowledges them.
	PendingAcksMax int
	// AlertTicks is how often a lasting condition (a fence, a failed WAL) is
	// reported again; CatchUpTicks is how long a fenced member waits to hear
	// from a leader before it reports the loud permanent fence.
	AlertTicks, CatchUpTicks int
	// PeerRepair: a TRUNCATED member that hears no leader for
	// CatchUpTicks repairs itself from its peers and votes again
	// (repair.go, docs/repair.md): two TRUNCATED members of four no longer
	// leave the cluster without a leader. Its steps are spec steps of the
	// production profile with -repair (spec/repairprod.go, and
	// spec/repairsnap.go for the answer by a snapshot; a trace declares it,
	// TraceParams.Repair). Off by default in the core (its scenarios and
	// randomized runs choose); impl/replica turns it on unless
	// replica.Config.NoPeerRepair (raftd --peer-repair=false).
	PeerRepair bool

	Storage Storage
	// Trace receives the node's steps in the trace/ format; nil (the
	// default) turns tracing off at no cost.
	Trace TraceSink
	// TraceNames names the nodes in the trace (TraceName): node id ->
	// name, a valid trace name (trace.ValidName); an id it leaves out is
	// s<id>. Every node of a cluster, and TraceConfig, must be given the
	// same map. Read only with Trace set.
	TraceNames map[NodeID]string
	// OnMark receives every coverage mark the node passes (marks.go); nil
	// (the default) reports none, at no cost. The replica runtime counts
	// them with impl/marks.
	OnMark func(Mark)

	// TestingBugs re-introduces the failures the durable rules prevent, one
	// switch per spec -bug of the same name. Tests only.
	TestingBugs Bug
}

func (c *Config) withDefaults() {
	setInt := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setU := func(p *uint64, v uint64) {
		if *p == 0 {
			*p = v
		}
	}
	setInt(&c.ElectionTick, 10)
	setInt(&c.HeartbeatTick, 1)
	setInt(&c.MsgEntriesMax, 256)
	setU(&c.MsgBytesMax, 1<<20)
	setInt(&c.InflightMsgsMax, 64)
	setU(&c.InflightBytesMax, 8<<20)
	setU(&c.EntryBytesMax, 1<<20)
	setU(&c.UncommittedBytesMax, 64<<20)
	setU(&c.CacheBytesMax, 4<<20)
	setU(&c.ApplyBytesMax, 4<<20)
	setInt(&c.PendingAcksMax, 256)
	setInt(&c.AlertTicks, 10*c.ElectionTick)
	setInt(&c.CatchUpTicks, 3*c.ElectionTick)
}

func (c *Config) validate() error {
	switch {
	case c.ID == None:
		return errors.New("raft: config: ID is 0")
	case !slices.Contains(c.Voters, c.ID) && !c.Joining:
		return fmt.Errorf("raft: config: ID %d is not among the voters %v", c.ID, c.Voters)
	case slices.Contains(c.Voters, c.ID) && c.Joining:
		return fmt.Errorf("raft: config: ID %d joins, but is among the initial voters %v", c.ID, c.Voters)
	case c.ElectionTick <= c.HeartbeatTick || c.HeartbeatTick < 1:
		return fmt.Errorf("raft: config: election tick %d must exceed heartbeat tick %d >= 1", c.ElectionTick, c.HeartbeatTick)
	case c.Rand == nil:
		return errors.New("raft: config: no Rand (inject a seeded source)")
	case c.Storage == nil:
		return errors.New("raft: config: no Storage")
	case c.LeaseRead && !c.CheckQuorum:
		return errors.New("raft: config: LeaseRead needs CheckQuorum")
	case c.MsgEntriesMax < 1 || c.InflightMsgsMax < 1 || c.PendingAcksMax < 1:
		return errors.New("raft: config: message, inflight and pending-ack limits must be positive")
	case c.EntryBytesMax > c.MsgBytesMax:
		return fmt.Errorf("raft: config: EntryBytesMax %d exceeds MsgBytesMax %d", c.EntryBytesMax, c.MsgBytesMax)
	case c.MsgEntriesMax > WireEntriesMax || c.MsgBytesMax > WireBytesMax:
		return fmt.Errorf("raft: config: MsgEntriesMax %d, MsgBytesMax %d beyond the wire's %d, %d",
			c.MsgEntriesMax, c.MsgBytesMax, WireEntriesMax, WireBytesMax)
	}
	seen := map[NodeID]bool{}
	for _, id := range c.Voters {
		if id == None || seen[id] {
			return fmt.Errorf("raft: config: voters %v: zero or repeated id", c.Voters)
		}
		seen[id] = true
	}
	if c.Trace != nil {
		if _, err := traceNames(append(slices.Clone(c.Voters), c.ID), c.TraceNames); err != nil {
			return fmt.Errorf("raft: config: %w", err)
		}
	}
	return nil
}

// Bug is a set of test-only switches that re-introduce the failures the
// durable rules prevent. The names are spec's -bug names (spec/config.go).
type Bug uint32

// The switches.
const (
	// BugSelfCountsAppended: the leader counts itself at its last index, not
	// its durable index (the seed's bug-661).
	BugSelfCountsAppended Bug = 1 << iota
	// BugFollowerAcksAppended: a follower acknowledges entries it has
	// appended but not made durable.
	BugFollowerAcksAppended
	// BugCandidateAdvertisesLearned: a candidate advertises
	// Max(durable index, learnedCommit).
	BugCandidateAdvertisesLearned
	// BugCandidateAdvertisesAppended: a candidate advertises its whole log.
	BugCandidateAdvertisesAppended
	// BugNoVoterLearnedFloor: a voter does not require the candidate to
	// reach its learnedCommit.
	BugNoVoterLearnedFloor
	// BugNoPromotionFence: a TRUNCATED or behind member campaigns and may
	// become leader.
	BugNoPromotionFence
	// BugTruncatedMemberVotes: a TRUNCATED member grants votes.
	BugTruncatedMemberVotes
	// BugReleaseAtLeaderCommit: the fence releases once the durable match
	// reaches the leader's commit index, whatever the leader's term.
	BugReleaseAtLeaderCommit
	// BugTruncationNotSynced: not a change of the core but of its driver
	// (the rafttest harness): a suffix truncation (Ready.TruncateFrom) is not
	// synced before the next input, so until the next flush a crash may bring
	// back the durable log as it was before it (impl/wal's TruncateSuffix
	// without a Sync; docs/refinement.md).
	BugTruncationNotSynced
	// BugMarkAfterCut: not a change of the core but of its storage: a
	// TRUNCATED recovery makes the cut of the log durable before the core's
	// mark (TruncatedAtTerm), which becomes durable only with the boot's
	// Ready, so a crash in between boots the cut log CLEAN (the boot window;
	// impl/wal's Open writes the mark first). The rafttest harness honours
	// it (its corrupt commands leave the mark to the core), and the core
	// traces the mark's persistence as the spec's Persist.
	BugMarkAfterCut
	// BugLagIsFence: reporting only (outside the spec): a running follower
	// whose fdatasync is a moment behind the commit index its leader sent
	// is reported fenced at once (row 2: an AlertFenced, FENCE SET in the
	// replica's log, /readyz 503) instead of after Config.ElectionTick
	// ticks of lag (evaluatePolicy).
	BugLagIsFence
	// BugLearnedCommitUnclamped: a follower learns a MsgApp's (or
	// MsgSnap's) LeaderCommit unclamped, as it was before issue 10 item 5,
	// instead of clamped to what the message proves it holds: one bad
	// value then closes its promotion fence and raises its voter floor for
	// ever (spec learnedFrom).
	BugLearnedCommitUnclamped
	// BugAmbiguousTailClean: the core half of spec -bug
	// ambiguous-tail-clean: a boot whose verdict is AMBIGUOUS (a damaged
	// last batch that may have been acknowledged) boots CLEAN, as the WAL's
	// TORN_TAIL did before issue 10 item 2: the boot keeps the mark it
	// found (none on a CLEAN member), and the member votes as if it never
	// had the batch. Its storage half (no mark written) is the driver's:
	// the rafttest harness honours it; impl/wal always writes the mark.
	BugAmbiguousTailClean
	// BugAmbiguousWithholdsVote: the core half of spec -bug
	// ambiguous-withholds-vote: an AMBIGUOUS member grants no vote (nor
	// pre-vote), as a TRUNCATED one: after a power loss that leaves a
	// quorum AMBIGUOUS nobody can be elected.
	BugAmbiguousWithholdsVote
	// BugConfigBeforeOwnTermCommit: a leader appends a configuration
	// change before it has committed an entry of its own term (the
	// single-server change bug Ongaro reported in 2015; docs/membership.md).
	BugConfigBeforeOwnTermCommit
	// BugConfigWhileUncommitted: a leader appends a configuration change
	// while its previous one is not committed yet.
	BugConfigWhileUncommitted
	// BugRepairVotesEarly: a TRUNCATED member repairing from its peers
	// (Config.PeerRepair) is released at the first answer, not once the
	// voters that answered meet every quorum (spec repair-votes-early).
	BugRepairVotesEarly
	// BugRepairIgnoresTerm: it asks in the corruption's own term and counts
	// answers of that term (spec repair-ignores-term).
	BugRepairIgnoresTerm
	// BugWipedVotes: a first boot takes part at once, unconfirmed
	// (firstboot.go): a wiped member votes (spec's wiped-votes).
	BugWipedVotes
	// BugWipeConfirmQuorum: a first boot is confirmed by a quorum of the
	// voters (itself counted out) instead of every other voter (spec's
	// wipe-confirm-quorum).
	BugWipeConfirmQuorum
	// BugTruncatedWithholdsVote: the rule before marked votes (issue 10
	// item 2, spec without -marked-votes): a TRUNCATED member grants no
	// vote (nor pre-vote) and never campaigns, instead of granting marked
	// votes (ambiguous.go) and leading on a unanimous election. Safe, but
	// a cluster of three with one TRUNCATED and one AMBIGUOUS member has
	// no quorum of unmarked grants and no unanimous election: it wedges
	// (spec TestLivenessTruncatedAndAmbiguous; the simulator's liveness
	// check). A trace declares it as the absence of markedVotes.
	BugTruncatedWithholdsVote
	bugEnd
)

// WipeBugs are the switches of the first-boot confirmation (firstboot.go):
// they act only on a node booted with Boot.FirstBoot.
const WipeBugs = BugWipedVotes | BugWipeConfirmQuorum

// ReportingBugs are the switches of what the core reports, outside the
// spec: they change no step the spec models, so a trace's config does not
// name them and spec has no switch of the same name.
const ReportingBugs = BugLagIsFence

// RepairBugs are the switches of the repair from peers (Config.PeerRepair,
// repair.go): their scenarios are testdata/repair's; a trace declares them
// only with TraceParams.Repair.
const RepairBugs = BugRepairVotesEarly | BugRepairIgnoresTerm

var bugNames = map[Bug]string{
	BugWipedVotes:                  "wiped-votes",
	BugWipeConfirmQuorum:           "wipe-confirm-quorum",
	BugSelfCountsAppended:          "self-counts-appended",
	BugFollowerAcksAppended:        "follower-acks-appended",
	BugCandidateAdvertisesLearned:  "candidate-advertises-learned",
	BugCandidateAdvertisesAppended: "candidate-advertises-appended",
	BugNoVoterLearnedFloor:         "no-voter-learned-floor",
	BugNoPromotionFence:            "no-promotion-fence",
	BugTruncatedMemberVotes:        "truncated-member-votes",
	BugReleaseAtLeaderCommit:       "release-at-leader-commit",
	BugTruncationNotSynced:         "truncation-not-synced",
	BugMarkAfterCut:                "mark-after-cut",
	BugLagIsFence:                  "lag-is-fence",
	BugLearnedCommitUnclamped:      "learned-commit-unclamped",
	BugConfigBeforeOwnTermCommit:   "config-before-own-term-commit",
	BugConfigWhileUncommitted:      "config-while-uncommitted",
	BugAmbiguousTailClean:          "ambiguous-tail-clean",
	BugAmbiguousWithholdsVote:      "ambiguous-withholds-vote",
	BugRepairVotesEarly:            "repair-votes-early",
	BugRepairIgnoresTerm:           "repair-ignores-term",
	BugTruncatedWithholdsVote:      "truncated-withholds-vote",
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

// ParseBugs parses a comma-separated list of switch names.
func ParseBugs(s string) (Bug, error) {
	var b Bug
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := false
		for bit, n := range bugNames {
			if n == name {
				b |= bit
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("raft: unknown bug %q", name)
		}
	}
	return b, nil
}

func (n *Node) has(b Bug) bool { return n.cfg.TestingBugs&b != 0 }
