package raft

import (
	"fmt"

	"github.com/durableraft/durableraft/trace"
)

// Boot is what the caller recovered at startup: the hard state and the
// WAL's verdicts (impl/wal's Recovery), and how far the state machine had
// applied. The log itself is read through Config.Storage; everything in it
// is durable (recovery syncs what it keeps).
type Boot struct {
	HardState HardState
	Verdict   Verdict // the log's verdict (Recovery.Verdict)
	// HardStateLost: the WAL could not recover the hard state
	// (Recovery.HardStateVerdict is TRUNCATED: rows H2, H6, H7, and H8 on
	// every later boot until an operator calls ClearHardStateLoss; or
	// WAL.HardStateLost()). HardState is then whatever copy recovery chose,
	// or zero. The member may have voted in a term it no longer knows, and
	// may have acknowledged entries to a leader of that term, so the node
	// runs passive for its whole life (boot policy row L): it grants no vote
	// and no pre-vote, never campaigns or leads, and answers AppendEntries
	// with MsgAppRespPassive, which the leader uses for flow control but
	// counts toward no quorum; it still stores the log durably and applies
	// what the leader says is committed, so it catches up. It reports
	// AlertHardStateLost every Config.AlertTicks. It is outside the spec:
	// its steps are not traced (docs/refinement.md, "What the driver must
	// do", item 5).
	HardStateLost bool
	Applied       uint64
	// Snapshot is the snapshot the state machine was restored from at this
	// boot (zero when none): storage holds its last entry (or its index is
	// storage's compaction base), and Applied is at least its index. Its
	// prefix is committed: the commit index starts there.
	Snapshot SnapshotInfo
	// TracePrefix is the trace's entries (term and value, TracePrefix) of
	// the log up to storage's compaction base, from the snapshot (tracing
	// only): the tracer holds the whole log.
	TracePrefix []trace.Entry
	// Membership is the configuration the snapshot records (the one in
	// force at its index; nil: the initial one, Config.Voters). The driver
	// must give it whenever the log was compacted past a configuration
	// entry (membership.go).
	Membership *Membership
	// FirstBoot is the data directory's first-boot record (firstboot.go;
	// nil: first boots are not confirmed).
	FirstBoot *FirstBoot
	// ForceNewCluster: make this node the only voter (firstboot.go's
	// forceNewCluster; raftd --force-new-cluster).
	ForceNewCluster bool
}

// The boot policy of seed 000 ("Boot Policy Decision Table", task 3.2),
// evaluated at boot and again on every tick, since its inputs change as the
// member catches up or stops hearing from a leader. It decides whether the
// member may lead; what the fence means for the protocol (no campaign, no
// promotion) is spec's PromotionFenceOpen, and when a TRUNCATED verdict
// ends is spec's FenceReleases.

// policyVerdict is the verdict as the fence sees it: TRUNCATED from the
// boot whose recovery cut the log until FenceReleases (sticky across
// restarts through HardState.TruncatedAtTerm); AMBIGUOUS likewise, from a
// boot whose last batch was damaged (HardState.Ambiguous; ambiguous.go);
// CLEAN and TORN_TAIL are clean.
type policyVerdict uint8

const (
	pvClean policyVerdict = iota + 1
	pvTruncated
	pvAmbiguous
	// pvTruncatedWithheld: TRUNCATED under BugTruncatedWithholdsVote (no
	// vote, no campaign, whatever the position).
	pvTruncatedWithheld
)

// position is the member's durable index against the commit high-water it
// learned (HardState.LearnedCommit).
type position uint8

const (
	posAtOrAbove position = iota + 1
	posBelow
)

// hardStateFinding is what recovery found of the hard state.
type hardStateFinding uint8

const (
	hsKept hardStateFinding = iota + 1
	hsLost                  // Boot.HardStateLost
)

// peerHeard says whether a leader was heard within Config.CatchUpTicks (or
// the window since boot has not run out yet).
type peerHeard uint8

const (
	peerYes peerHeard = iota + 1
	peerNo
)

// Outcome is the boot policy's decision.
type Outcome uint8

// Outcomes.
const (
	// OutcomeEligible: may campaign and lead.
	OutcomeEligible Outcome = iota + 1
	// OutcomeFenced: FENCE + CATCH-UP: no campaign, no promotion; catching
	// up from the leader; ELIGIBLE again when the inputs say so.
	OutcomeFenced
	// OutcomePermanentFence: the LOUD PERMANENT FENCE: fenced and no leader
	// to catch up from. The node stays alive, keeps listening for a leader,
	// and says so every Config.AlertTicks. It never exits.
	OutcomePermanentFence
	// OutcomeHardStateLost: the hard state was lost (Boot.HardStateLost):
	// no vote, no pre-vote, no campaign, no promotion, acknowledgments
	// passive, until an operator replaces the member. Reported every
	// Config.AlertTicks (AlertHardStateLost). Nothing the member hears
	// releases it.
	OutcomeHardStateLost
	outcomeAssert // impossible inputs
)

func (o Outcome) String() string {
	switch o {
	case OutcomeEligible:
		return "ELIGIBLE"
	case OutcomeFenced:
		return "FENCE+CATCH-UP"
	case OutcomePermanentFence:
		return "LOUD-PERMANENT-FENCE"
	case OutcomeHardStateLost:
		return "HARD-STATE-LOST"
	}
	return "ASSERT"
}

// policyInputs are the table's columns.
type policyInputs struct {
	hardState hardStateFinding
	verdict   policyVerdict
	position  position
	snapshot  bool // the log starts after a compaction base (the seed's snapshot sentinel)
	firstBoot bool // empty log, no hard state: a cold start
	peer      peerHeard
}

// policyRow is one row. A nil slice matches any value of its column.
type policyRow struct {
	row        string
	hardStates []hardStateFinding
	verdicts   []policyVerdict
	positions  []position
	snapshot   []bool
	firstBoot  []bool
	peers      []peerHeard
	outcome    Outcome
	why        string
}

var (
	anyBool = []bool{false, true}
	no      = []bool{false}
	yes     = []bool{true}
	kept    = []hardStateFinding{hsKept}
	lost    = []hardStateFinding{hsLost}
)

// bootPolicy is the table. Every combination of inputs matches exactly one
// row (TestBootPolicyExhaustive); TestBootPolicyRows drives each row through
// a node.
var bootPolicy = []policyRow{
	{"1", kept, []policyVerdict{pvClean}, []position{posAtOrAbove}, anyBool, no, nil, OutcomeEligible,
		"log intact and not behind: a normal promotable member (Req 2.3)"},
	{"6", kept, []policyVerdict{pvClean}, []position{posAtOrAbove}, no, yes, nil, OutcomeEligible,
		"empty first-boot log: not behind anything, promotable (Req 2.1, 2.3)"},
	{"2", kept, []policyVerdict{pvClean}, []position{posBelow}, no, no, []peerHeard{peerYes}, OutcomeFenced,
		"intact but behind the commit index it learned: catch up from the leader, then ELIGIBLE (Req 2.2, 2.3, 2.6)"},
	{"4b", kept, []policyVerdict{pvClean}, []position{posBelow}, no, no, []peerHeard{peerNo}, OutcomePermanentFence,
		"behind and no leader to catch up from: loud, non-promotable, alive; releases on catch-up (Req 2.4, 2.6)"},
	{"5", kept, []policyVerdict{pvClean}, []position{posBelow}, yes, no, []peerHeard{peerYes}, OutcomeFenced,
		"a compaction base (snapshot sentinel) behind the high-water: CLEAN-but-behind, catch up (Req 2.1, 2.2)"},
	{"5b", kept, []policyVerdict{pvClean}, []position{posBelow}, yes, no, []peerHeard{peerNo}, OutcomeFenced,
		"a legitimate snapshot sentinel is never the permanent fence: it waits for a leader (Req 2.1)"},
	{"3", kept, []policyVerdict{pvTruncated}, []position{posBelow}, anyBool, no, []peerHeard{peerYes}, OutcomeFenced,
		"corruption cut the durable log: catch up from the leader until FenceReleases, then ELIGIBLE (Req 2.2, 2.6)"},
	{"4", kept, []policyVerdict{pvTruncated}, []position{posBelow}, anyBool, no, []peerHeard{peerNo}, OutcomePermanentFence,
		"corrupted and no leader: loud permanent fence, alive, keeps listening; releases on catch-up (Req 2.4, 2.6)"},
	{"3b", kept, []policyVerdict{pvTruncated}, []position{posAtOrAbove}, anyBool, no, nil, OutcomeEligible,
		"corruption cut the durable log, not below the commit index it learned: as row 7, it votes with its grants marked and may campaign, but only a unanimous election counts them, until it is elected so or FenceReleases (marked votes, docs/durable-raft.md)"},
	{"3w", kept, []policyVerdict{pvTruncatedWithheld}, nil, anyBool, no, []peerHeard{peerYes}, OutcomeFenced,
		"BugTruncatedWithholdsVote (the rule before marked votes): corruption cut the durable log: no vote, no campaign; catch up from the leader until FenceReleases"},
	{"4w", kept, []policyVerdict{pvTruncatedWithheld}, nil, anyBool, no, []peerHeard{peerNo}, OutcomePermanentFence,
		"BugTruncatedWithholdsVote: corrupted and no leader: loud permanent fence, alive, keeps listening; releases on catch-up"},
	{"7", kept, []policyVerdict{pvAmbiguous}, []position{posAtOrAbove}, anyBool, no, nil, OutcomeEligible,
		"the last batch was damaged and may have been acknowledged (a power loss, WAL row R6): it votes and may campaign, but its grants count only towards a unanimous election until it is elected so or FenceReleases (spec/power.go)"},
	{"7b", kept, []policyVerdict{pvAmbiguous}, []position{posBelow}, anyBool, no, []peerHeard{peerYes}, OutcomeFenced,
		"AMBIGUOUS and behind the commit index it learned: catch up from the leader (as row 2); FenceReleases repairs it"},
	{"7c", kept, []policyVerdict{pvAmbiguous}, []position{posBelow}, anyBool, no, []peerHeard{peerNo}, OutcomePermanentFence,
		"AMBIGUOUS, behind, and no leader to catch up from: loud, non-promotable, alive; releases on catch-up (as row 4b)"},
	{"A4", kept, []policyVerdict{pvAmbiguous}, nil, anyBool, yes, nil, outcomeAssert,
		"a first boot has no last batch to find damaged"},
	{"A1", kept, []policyVerdict{pvClean}, []position{posBelow}, anyBool, yes, nil, outcomeAssert,
		"a first boot has nothing learned to be behind"},
	{"A2", kept, []policyVerdict{pvTruncated, pvTruncatedWithheld}, nil, anyBool, yes, nil, outcomeAssert,
		"a first boot has no log to find corrupted"},
	{"A3", kept, []policyVerdict{pvClean}, []position{posAtOrAbove}, yes, yes, nil, outcomeAssert,
		"a first boot has no compaction base"},
	{"L", lost, nil, nil, anyBool, anyBool, nil, OutcomeHardStateLost,
		"the hard state was lost (WAL rows H2, H6, H7, H8): this member may have voted, and acknowledged entries, in a term it no longer knows, so it grants no vote, never campaigns, and its acknowledgments count toward no quorum; it keeps the log and applies; replace the member (Boot.HardStateLost)"},
}

func (r *policyRow) matches(in policyInputs) bool {
	has := func(n int, f func(k int) bool) bool {
		for k := 0; k < n; k++ {
			if f(k) {
				return true
			}
		}
		return false
	}
	return has(len(r.hardStates), func(k int) bool { return r.hardStates[k] == in.hardState }) &&
		(r.verdicts == nil || has(len(r.verdicts), func(k int) bool { return r.verdicts[k] == in.verdict })) &&
		(r.positions == nil || has(len(r.positions), func(k int) bool { return r.positions[k] == in.position })) &&
		has(len(r.snapshot), func(k int) bool { return r.snapshot[k] == in.snapshot }) &&
		has(len(r.firstBoot), func(k int) bool { return r.firstBoot[k] == in.firstBoot }) &&
		(r.peers == nil || has(len(r.peers), func(k int) bool { return r.peers[k] == in.peer }))
}

// decidePolicy returns the row the inputs match.
func decidePolicy(in policyInputs) *policyRow {
	for k := range bootPolicy {
		if bootPolicy[k].matches(in) {
			return &bootPolicy[k]
		}
	}
	panic(fmt.Sprintf("raft: boot policy: no row for %+v", in))
}

// policyInputs reads the table's inputs from the node.
func (n *Node) policyInputs() policyInputs {
	in := policyInputs{hardState: hsKept, verdict: pvClean, position: posAtOrAbove, peer: peerYes,
		snapshot: n.log.first > 1, firstBoot: n.firstBoot && n.log.last == 0 && n.hs.LearnedCommit == 0}
	if n.hardStateLost {
		in.hardState = hsLost
	}
	switch {
	case n.truncated() && n.has(BugTruncatedWithholdsVote):
		in.verdict = pvTruncatedWithheld
	case n.truncated():
		in.verdict = pvTruncated
	case n.ambiguous():
		in.verdict = pvAmbiguous
	}
	if n.log.durable < n.hs.LearnedCommit {
		in.position = posBelow
	}
	if n.leaderSilentTicks >= n.cfg.CatchUpTicks {
		in.peer = peerNo
	}
	return in
}

// fenceOpen is spec's promotionFenceOpen: durable >= learnedCommit (a
// candidate that is not CLEAN needs a unanimous election, won), and under
// BugTruncatedWithholdsVote not TRUNCATED.
func (n *Node) fenceOpen() bool {
	if n.has(BugNoPromotionFence) {
		return true
	}
	return !(n.truncated() && n.has(BugTruncatedWithholdsVote)) && n.log.durable >= n.hs.LearnedCommit
}

// promotable reports whether the node may campaign. A member whose hard
// state was lost never may (no bug switch opens that fence).
func (n *Node) promotable() bool {
	return !n.walFailed && !n.hardStateLost && !n.stateFenced && !n.unconfirmed() && n.fenceOpen()
}

// evaluatePolicy re-evaluates the boot policy, reporting a change at once
// and a lasting fence every Config.AlertTicks.
//
// Replication lag is not a fence: a running, eligible member whose log is
// CLEAN and a little behind the commit index it learned matches row 2 for
// as long as its fdatasync takes. With the clamp (learnedFrom) a follower
// never learns beyond what it holds durably, but a leader commits through
// its followers before its own fdatasync lands, and keeps that learned
// commit when it steps down (spec's FollowerLagsLearned, reached by
// TestFollowerLagReachable; testdata/replication_lag_leader.txt). It stays ELIGIBLE in the status, and
// nothing is alerted or logged, until the lag has lasted
// Config.ElectionTick ticks; only then is it the fence of row 2. This is
// reporting only: promotion is guarded by promotable (fenceOpen), which
// reads durable and learnedCommit themselves, so a lagging follower never
// campaigns or leads meanwhile. A boot (no row yet) is never graced.
func (n *Node) evaluatePolicy(tick bool) {
	row := decidePolicy(n.policyInputs())
	if row.outcome == outcomeAssert {
		failf("boot policy row %s: %s", row.row, row.why)
	}
	if tick {
		n.alertElapsed++
	}
	switch {
	case row.row != "2" || n.policyRow == nil || n.policyRow.outcome != OutcomeEligible || n.has(BugLagIsFence):
		n.lagTicks = 0
	default: // an ELIGIBLE follower in row 2: lagTicks < ElectionTick (at ElectionTick the row is taken, and the case above resets it)
		if tick {
			n.lagTicks++
		}
		if n.lagTicks < n.cfg.ElectionTick {
			return // lagging, not fenced (yet)
		}
	}
	changed := row != n.policyRow
	if n.policyRow != nil && changed && row.outcome == OutcomeEligible && n.policyRow.outcome != OutcomeEligible {
		n.alertCondition(AlertFenceReleased, "row %s: %s (durable %d, learned commit %d)", row.row, row.outcome, n.log.durable, n.hs.LearnedCommit)
	}
	n.policyRow = row
	if row.outcome == OutcomeEligible || (!changed && n.alertElapsed < n.cfg.AlertTicks) {
		return
	}
	n.alertElapsed = 0
	verdict := n.verdictString()
	if n.hs.TruncatedAtTerm != 0 {
		verdict += fmt.Sprintf(" at term %d", n.hs.TruncatedAtTerm)
	}
	switch row.outcome {
	case OutcomeHardStateLost:
		n.alertCondition(AlertHardStateLost, "row %s: %s: %s (log verdict %s, term %d, durable %d, commit %d, vote requests refused %d)",
			row.row, row.outcome, row.why, verdict, n.hs.Term, n.log.durable, n.log.committed, n.votesRefused)
		return
	case OutcomePermanentFence:
		n.alertCondition(AlertPermanentFence, "row %s: %s: %s (verdict %s, durable %d, learned commit %d, no leader for %d ticks)",
			row.row, row.outcome, row.why, verdict, n.log.durable, n.hs.LearnedCommit, n.leaderSilentTicks)
	default:
		n.alertCondition(AlertFenced, "row %s: %s: %s (verdict %s, durable %d, learned commit %d, no leader for %d ticks)",
			row.row, row.outcome, row.why, verdict, n.log.durable, n.hs.LearnedCommit, n.leaderSilentTicks)
	}
}
