package raft

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func testConfig(id NodeID, st Storage, voters ...NodeID) Config {
	if len(voters) == 0 {
		voters = []NodeID{1, 2, 3}
	}
	return Config{ID: id, Voters: voters, ElectionTick: 10, HeartbeatTick: 1,
		Rand: rand.New(rand.NewPCG(uint64(id), 7)), Storage: st}
}

// logOf builds a storage holding entries of the given terms from index 1.
func logOf(terms ...uint64) *MemoryStorage {
	st := NewMemoryStorage()
	var ents []Entry
	for k, t := range terms {
		ents = append(ents, Entry{Index: uint64(k + 1), Term: t, Data: []byte{byte(k)}})
	}
	if err := st.Append(ents); err != nil {
		panic(err)
	}
	return st
}

func mustNode(t *testing.T, cfg Config, boot Boot) *Node {
	t.Helper()
	n, err := NewNode(cfg, boot)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBootPolicyExhaustive: every combination of the table's inputs matches
// exactly one row (TigerBeetle's recovery_cases discipline).
func TestBootPolicyExhaustive(t *testing.T) {
	combinations := 0
	for _, h := range []hardStateFinding{hsKept, hsLost} {
		for _, v := range []policyVerdict{pvClean, pvTruncated, pvAmbiguous, pvTruncatedWithheld} {
			for _, p := range []position{posAtOrAbove, posBelow} {
				for _, snap := range []bool{false, true} {
					for _, first := range []bool{false, true} {
						for _, peer := range []peerHeard{peerYes, peerNo} {
							in := policyInputs{hardState: h, verdict: v, position: p, snapshot: snap, firstBoot: first, peer: peer}
							var rows []string
							for k := range bootPolicy {
								if bootPolicy[k].matches(in) {
									rows = append(rows, bootPolicy[k].row)
								}
							}
							if len(rows) != 1 {
								t.Errorf("%+v matches rows %v, want exactly one", in, rows)
							}
							if h == hsLost && len(rows) == 1 && rows[0] != "L" {
								t.Errorf("%+v: a lost hard state decides row %s, want L", in, rows[0])
							}
							combinations++
						}
					}
				}
			}
		}
	}
	if combinations != 128 {
		t.Fatalf("%d combinations", combinations)
	}
}

// tickSilent ticks a follower that hears from no leader past CatchUpTicks.
func tickSilent(n *Node) {
	for k := 0; k <= n.cfg.CatchUpTicks; k++ {
		n.Tick()
	}
}

func alertsOf(rd Ready, kind AlertKind) int {
	c := 0
	for _, a := range rd.Alerts {
		if a.Kind == kind {
			c++
		}
	}
	return c
}

// TestBootPolicyRows drives each row of the table through a node: what it
// decides at boot, and how the member leaves the fence.
func TestBootPolicyRows(t *testing.T) {
	type tc struct {
		row      string
		outcome  Outcome
		st       *MemoryStorage
		hs       HardState
		verdict  Verdict
		silent   bool // no leader for CatchUpTicks
		bugs     Bug
		leaveRow string // the row after a leader's AppendEntries caught it up (and repaired it)
	}
	compacted := logOf(1, 1, 1, 1, 1)
	if err := compacted.Compact(3); err != nil {
		t.Fatal(err)
	}
	cases := []tc{
		{row: "6", outcome: OutcomeEligible, st: NewMemoryStorage(), verdict: VerdictClean},
		{row: "1", outcome: OutcomeEligible, st: logOf(1, 1, 1), hs: HardState{Term: 1, LearnedCommit: 3}, verdict: VerdictClean},
		{row: "1", outcome: OutcomeEligible, st: logOf(1, 1, 1), hs: HardState{Term: 1, LearnedCommit: 2}, verdict: VerdictTornTail},
		{row: "2", outcome: OutcomeFenced, st: logOf(1, 1, 1), hs: HardState{Term: 1, LearnedCommit: 5}, verdict: VerdictClean, leaveRow: "1"},
		{row: "4b", outcome: OutcomePermanentFence, st: logOf(1, 1, 1), hs: HardState{Term: 1, LearnedCommit: 5}, verdict: VerdictClean, silent: true, leaveRow: "1"},
		{row: "3", outcome: OutcomeFenced, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 5}, verdict: VerdictTruncated, leaveRow: "1"},
		{row: "3b", outcome: OutcomeEligible, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 2, TruncatedAtTerm: 1}, verdict: VerdictClean, leaveRow: "1"},
		{row: "3b", outcome: OutcomeEligible, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 2}, verdict: VerdictTruncated, leaveRow: "1"},
		{row: "3w", outcome: OutcomeFenced, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 2, TruncatedAtTerm: 1}, verdict: VerdictClean, bugs: BugTruncatedWithholdsVote, leaveRow: "1"},
		{row: "4w", outcome: OutcomePermanentFence, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 1}, verdict: VerdictTruncated, bugs: BugTruncatedWithholdsVote, silent: true, leaveRow: "1"},
		{row: "4", outcome: OutcomePermanentFence, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 5}, verdict: VerdictTruncated, silent: true, leaveRow: "1"},
		{row: "5", outcome: OutcomeFenced, st: compacted, hs: HardState{Term: 1, LearnedCommit: 8}, verdict: VerdictClean},
		{row: "5b", outcome: OutcomeFenced, st: compacted, hs: HardState{Term: 1, LearnedCommit: 8}, verdict: VerdictClean, silent: true},
		// AMBIGUOUS (a power loss damaged the last batch): the WAL wrote the
		// mark, or (the core's own) the boot adds it; a later CLEAN boot
		// keeps it (sticky). It may campaign; FenceReleases repairs it.
		{row: "7", outcome: OutcomeEligible, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 2, TruncatedAtTerm: 1, Ambiguous: true}, verdict: VerdictAmbiguous, leaveRow: "1"},
		{row: "7", outcome: OutcomeEligible, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 1}, verdict: VerdictAmbiguous, leaveRow: "1"},
		{row: "7", outcome: OutcomeEligible, st: logOf(1, 1), hs: HardState{Term: 1, TruncatedAtTerm: 1, Ambiguous: true}, verdict: VerdictClean, leaveRow: "1"},
		{row: "7b", outcome: OutcomeFenced, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 5}, verdict: VerdictAmbiguous, leaveRow: "1"},
		{row: "7c", outcome: OutcomePermanentFence, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 5}, verdict: VerdictAmbiguous, silent: true, leaveRow: "1"},
		// An AMBIGUOUS boot of a TRUNCATED member stays TRUNCATED (spec PowerLoss).
		{row: "3b", outcome: OutcomeEligible, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 2, TruncatedAtTerm: 1}, verdict: VerdictAmbiguous, leaveRow: "1"},
		{row: "3", outcome: OutcomeFenced, st: logOf(1, 1), hs: HardState{Term: 1, LearnedCommit: 3, TruncatedAtTerm: 1}, verdict: VerdictAmbiguous, leaveRow: "1"},
	}
	for _, c := range cases {
		t.Run("row "+c.row+" "+c.verdict.String(), func(t *testing.T) {
			st := c.st.Clone()
			cfg := testConfig(2, st)
			cfg.TestingBugs = c.bugs
			n := mustNode(t, cfg, Boot{HardState: c.hs, Verdict: c.verdict})
			if c.silent {
				tickSilent(n)
			}
			s := n.Status()
			if s.FenceRow != c.row || s.Fence != c.outcome {
				t.Fatalf("row %s %v, want row %s %v", s.FenceRow, s.Fence, c.row, c.outcome)
			}
			if (c.outcome == OutcomeEligible) != n.promotable() {
				t.Fatalf("promotable %v with outcome %v", n.promotable(), c.outcome)
			}
			rd := n.Ready()
			if c.outcome == OutcomePermanentFence && alertsOf(rd, AlertPermanentFence) == 0 {
				t.Fatalf("no permanent-fence alert: %v", rd.Alerts)
			}
			if c.outcome != OutcomeEligible {
				if err := n.Campaign(); err != ErrFenced {
					t.Fatalf("a fenced member campaigned: %v", err)
				}
			}
			if c.verdict == VerdictTruncated && (!rd.HardStateChanged || rd.HardState.TruncatedAtTerm != c.hs.Term) {
				t.Fatalf("the TRUNCATED boot did not persist truncatedAtTerm: %+v", rd)
			}
			if s, want := n.Status(), c.row[0] == '7'; s.HardState.Ambiguous != want || (want && (s.Verdict != "AMBIGUOUS" || s.HardState.TruncatedAtTerm != c.hs.Term)) {
				t.Fatalf("hard state %+v verdict %s, AMBIGUOUS mark wanted: %v", s.HardState, s.Verdict, want)
			}
			if c.leaveRow == "" {
				return
			}
			catchUp(t, n, st)
			if s := n.Status(); s.FenceRow != c.leaveRow || s.Fence != OutcomeEligible || s.Verdict != "CLEAN" || s.HardState.Ambiguous {
				t.Fatalf("after catching up: row %s %v %s (%+v), want row %s ELIGIBLE CLEAN", s.FenceRow, s.Fence, s.Verdict, s.HardState, c.leaveRow)
			}
		})
	}
}

// catchUp plays a leader of term 2 (newer than any corruption here) that
// overwrites n's log with five entries of term 1 and one of its own, and
// commits them all.
func catchUp(t *testing.T, n *Node, st *MemoryStorage) {
	t.Helper()
	fenced := n.Status().Fence != OutcomeEligible
	ents := []Entry{{1, 1, nil}, {2, 1, nil}, {3, 1, nil}, {4, 1, nil}, {5, 1, nil}, {6, 2, nil}}
	m := Message{Type: MsgApp, From: 1, To: 2, Term: 2, Entries: ents, Commit: 6, LeaderCommit: 6}
	if err := n.Step(m); err != nil {
		t.Fatal(err)
	}
	rd := n.Ready()
	if rd.TruncateFrom > 0 {
		if err := st.Truncate(rd.TruncateFrom); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Append(rd.Entries); err != nil {
		t.Fatal(err)
	}
	if len(rd.MessagesAfterPersist) != 0 {
		t.Fatalf("acknowledged before the entries were durable: %v", rd.MessagesAfterPersist)
	}
	n.Advance(AdvanceInfo{DurableIndex: 6, DurableTerm: 2})
	rd = n.Ready()
	if len(rd.MessagesAfterPersist) != 1 || !rd.MessagesAfterPersist[0].Success || rd.MessagesAfterPersist[0].MatchIndex != 6 {
		t.Fatalf("no durable acknowledgment: %v", rd.MessagesAfterPersist)
	}
	if fenced && alertsOf(rd, AlertFenceReleased) == 0 {
		t.Fatalf("no release alert: %v", rd.Alerts)
	}
}

// TestFenceStickyAcrossRestart: a TRUNCATED member that restarts before its
// repair is still TRUNCATED, though the WAL now recovers CLEAN (spec: the
// verdict survives Crash).
func TestFenceStickyAcrossRestart(t *testing.T) {
	st := logOf(1, 1)
	n := mustNode(t, testConfig(2, st), Boot{HardState: HardState{Term: 3, LearnedCommit: 4}, Verdict: VerdictTruncated})
	hs := n.Ready().HardState
	if hs.TruncatedAtTerm != 3 {
		t.Fatalf("truncatedAtTerm %d, want the term of the corrupted boot 3", hs.TruncatedAtTerm)
	}
	n2 := mustNode(t, testConfig(2, st), Boot{HardState: hs, Verdict: VerdictClean})
	if s := n2.Status(); s.Verdict != "TRUNCATED" || s.FenceRow != "3" {
		t.Fatalf("after a clean restart: %+v", s)
	}
	// A TRUNCATED member's grant to an up-to-date candidate is marked
	// (it counts only towards a unanimous election), and with
	// BugTruncatedWithholdsVote there is none.
	m := Message{Type: MsgVote, From: 1, To: 2, Term: 4, LastLogTerm: 1, LastLogIndex: 9}
	if err := n2.Step(m); err != nil {
		t.Fatal(err)
	}
	rd := n2.Ready()
	if len(rd.MessagesAfterPersist) != 1 || !rd.MessagesAfterPersist[0].Granted || !rd.MessagesAfterPersist[0].Ambiguous {
		t.Fatalf("a TRUNCATED member's vote, want granted and marked: %v", rd.MessagesAfterPersist)
	}
	cfg := testConfig(2, st)
	cfg.TestingBugs = BugTruncatedWithholdsVote
	n3 := mustNode(t, cfg, Boot{HardState: hs, Verdict: VerdictClean})
	if err := n3.Step(m); err != nil {
		t.Fatal(err)
	}
	if rd := n3.Ready(); len(rd.MessagesAfterPersist) != 1 || rd.MessagesAfterPersist[0].Granted {
		t.Fatalf("with BugTruncatedWithholdsVote a TRUNCATED member voted: %v", rd.MessagesAfterPersist)
	}
}

// TestPermanentFenceRepeatsAndNeverExits: the loud permanent fence repeats
// every AlertTicks, for as long as it lasts.
func TestPermanentFenceRepeatsAndNeverExits(t *testing.T) {
	n := mustNode(t, testConfig(2, logOf(1)), Boot{HardState: HardState{Term: 1, LearnedCommit: 2}, Verdict: VerdictTruncated})
	alerts := 0
	for k := 0; k < 20*n.cfg.AlertTicks; k++ {
		n.Tick()
		alerts += alertsOf(n.Ready(), AlertPermanentFence)
	}
	if alerts < 15 {
		t.Fatalf("%d permanent-fence alerts in %d alert intervals", alerts, 20)
	}
	if n.Status().Role != RoleFollower {
		t.Fatal("a fenced member left the follower role")
	}
	if !strings.Contains(n.Status().FenceRow, "4") {
		t.Fatalf("row %s", n.Status().FenceRow)
	}
}
