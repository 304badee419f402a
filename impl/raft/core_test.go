package raft

import (
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/trace"
)

// module is the project's import path.
const module = "github.com/durableraft/durableraft"

// TestCoreIsPure: the core imports no I/O, no concurrency, no clock and no
// randomness of its own (time enters through Tick, randomness through
// Config.Rand), and of the project's own packages only trace/ (the event
// format it writes) and its own quorum/ and tracker/ (which import no
// project package but quorum/): not impl/wal (recovery enters through
// Boot), not spec/. Checked on the source with go/parser.
func TestCoreIsPure(t *testing.T) {
	forbidden := map[string]bool{"os": true, "net": true, "sync": true, "sync/atomic": true, "time": true,
		"math/rand": true, "math/rand/v2": true, "crypto/rand": true, "io/ioutil": true, "syscall": true, "unsafe": true}
	var files []string
	for _, pat := range []string{"*.go", "quorum/*.go", "tracker/*.go"} {
		fs, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	allowed := map[string]bool{module + "/trace": true, module + "/impl/raft/quorum": true, module + "/impl/raft/tracker": true}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, p := range importsOf(t, f) {
			if forbidden[p] || strings.HasPrefix(p, "net/") || strings.HasPrefix(p, "os/") {
				t.Errorf("%s imports %q", f, p)
			}
			if strings.HasPrefix(p, module+"/") && (!allowed[p] || (strings.Contains(f, "/") && p != module+"/impl/raft/quorum")) {
				t.Errorf("%s imports the project's %q: the core imports only trace/", f, p)
			}
		}
		src, _ := os.ReadFile(f)
		if strings.Contains(string(src), "go func") {
			t.Errorf("%s starts a goroutine", f)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}

// TestImplLayering: nothing under impl/, tests included, imports spec/ (or
// any project package outside impl/ but trace/, through which spec/ could
// come in): impl/ and spec/ meet only in conformance/, cmd/ and tla/.
// Checked on every .go file of the tree with go/parser; `make check` also
// asks go list for the transitive imports.
func TestImplLayering(t *testing.T) {
	files := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		files++
		for _, p := range importsOf(t, path) {
			rel, ok := strings.CutPrefix(p, module+"/")
			if ok && rel != "trace" && !strings.HasPrefix(rel, "impl/") {
				t.Errorf("%s imports %q: impl/ imports of the project only impl/... and trace/", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 40 {
		t.Fatalf("checked only %d files under impl/", files)
	}
}

func importsOf(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatalf("%s: import %s: %v", path, imp.Path.Value, err)
		}
		out = append(out, p)
	}
	return out
}

// TestValidateRefuses: every field is checked at the gate, including
// peer-supplied ranges of 2^64-1.
func TestValidateRefuses(t *testing.T) {
	max := uint64(math.MaxUint64)
	app := Message{Type: MsgApp, From: 1, To: 2, Term: 3, PrevLogIndex: 1, PrevLogTerm: 1,
		Entries: []Entry{{Index: 2, Term: 2}, {Index: 3, Term: 3}}, Commit: 3, LeaderCommit: 4}
	ok := func(m Message) Message { return m }
	cases := map[string]Message{
		"unknown type":               {Type: 99, From: 1, To: 2, Term: 1},
		"not to me":                  {Type: MsgVote, From: 1, To: 3, Term: 1},
		"from myself":                {Type: MsgVote, From: 2, To: 2, Term: 1},
		"from a stranger":            {Type: MsgVote, From: 7, To: 2, Term: 1},
		"term 0":                     {Type: MsgVote, From: 1, To: 2},
		"term 2^64-1":                {Type: MsgVote, From: 1, To: 2, Term: max},
		"vote last index 2^64-1":     {Type: MsgVote, From: 1, To: 2, Term: 3, LastLogIndex: max, LastLogTerm: 1},
		"vote last term beyond term": {Type: MsgVote, From: 1, To: 2, Term: 3, LastLogIndex: 1, LastLogTerm: 4},
		"vote with entries":          {Type: MsgVote, From: 1, To: 2, Term: 3, Entries: []Entry{{Index: 1, Term: 1}}},
		"pre-vote transfer":          {Type: MsgPreVote, From: 1, To: 2, Term: 3, Transfer: true},
		"response with match":        {Type: MsgVoteResp, From: 1, To: 2, Term: 3, MatchIndex: 1},
		"timeout-now with seq":       {Type: MsgTimeoutNow, From: 1, To: 2, Term: 3, Seq: 1},
		"app prev 2^64-1":            func() Message { m := ok(app); m.PrevLogIndex, m.Entries, m.Commit = max, nil, 0; return m }(),
		"app entries past 2^62":      func() Message { m := ok(app); m.PrevLogIndex = IndexMax; return m }(),
		"app gap in entries":         func() Message { m := ok(app); m.Entries = []Entry{{Index: 2, Term: 2}, {Index: 4, Term: 3}}; return m }(),
		"app term falls":             func() Message { m := ok(app); m.Entries = []Entry{{Index: 2, Term: 3}, {Index: 3, Term: 2}}; return m }(),
		"app entry beyond term":      func() Message { m := ok(app); m.Entries = []Entry{{Index: 2, Term: 4}}; m.Commit = 2; return m }(),
		"app entry before prev term": func() Message { m := ok(app); m.PrevLogTerm = 3; return m }(),
		"app commit beyond last":     func() Message { m := ok(app); m.Commit = 4; return m }(),
		"app commit above leader's":  func() Message { m := ok(app); m.LeaderCommit = 2; return m }(),
		"app leader commit 2^64-1":   func() Message { m := ok(app); m.LeaderCommit = max; return m }(),
		"app prev term at index 0":   {Type: MsgApp, From: 1, To: 2, Term: 3, PrevLogTerm: 1},
		"app too many entries":       func() Message { m := ok(app); m.Entries = make([]Entry, WireEntriesMax+1); return m }(),
		"app too many bytes": func() Message {
			m := ok(app)
			m.Entries = []Entry{{Index: 2, Term: 2, Data: make([]byte, WireBytesMax+1)}}
			return m
		}(),
		"resp success with hint":       {Type: MsgAppResp, From: 1, To: 2, Term: 3, Success: true, MatchIndex: 1, HintIndex: 1},
		"resp rejection with match":    {Type: MsgAppResp, From: 1, To: 2, Term: 3, MatchIndex: 1},
		"resp match 2^64-1":            {Type: MsgAppResp, From: 1, To: 2, Term: 3, Success: true, MatchIndex: max},
		"resp hint 2^64-1":             {Type: MsgAppResp, From: 1, To: 2, Term: 3, HintIndex: max, HintTerm: 1},
		"resp hint term beyond term":   {Type: MsgAppResp, From: 1, To: 2, Term: 3, HintIndex: 1, HintTerm: 4},
		"resp with vote fields":        {Type: MsgAppResp, From: 1, To: 2, Term: 3, LastLogIndex: 1},
		"passive with vote fields":     {Type: MsgAppRespPassive, From: 1, To: 2, Term: 3, LastLogIndex: 1},
		"passive rejection with match": {Type: MsgAppRespPassive, From: 1, To: 2, Term: 3, MatchIndex: 1},
		"passive match 2^64-1":         {Type: MsgAppRespPassive, From: 1, To: 2, Term: 3, Success: true, MatchIndex: max},
		"vote response with entries":   {Type: MsgVoteResp, From: 1, To: 2, Term: 3, Entries: []Entry{{Index: 1, Term: 1}}},
		"pre-vote response with round": {Type: MsgPreVoteResp, From: 1, To: 2, Term: 3, Round: 1},
	}
	for name, m := range cases {
		if err := Validate(&m, 2, []NodeID{1, 2, 3}); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
	if err := Validate(&app, 2, []NodeID{1, 2, 3}); err != nil {
		t.Errorf("a valid AppendEntries refused: %v", err)
	}
}

// TestHostileRangesDoNotWedge: values at the limits from a peer are refused
// or clamped, and the node stays live: a follower asked to match at 2^62
// rejects with its own frontier as the hint; a leader told of a match
// beyond its log ignores it.
func TestHostileRangesDoNotWedge(t *testing.T) {
	n := mustNode(t, testConfig(2, logOf(1, 1)), Boot{HardState: HardState{Term: 1}, Verdict: VerdictClean})
	m := Message{Type: MsgApp, From: 1, To: 2, Term: 2, PrevLogIndex: IndexMax, PrevLogTerm: 2, LeaderCommit: IndexMax}
	if err := n.Step(m); err != nil {
		t.Fatal(err)
	}
	rd := n.Ready()
	if len(rd.MessagesAfterPersist) != 1 || rd.MessagesAfterPersist[0].Success || rd.MessagesAfterPersist[0].HintIndex != 2 {
		t.Fatalf("want a rejection hinting at index 2: %v", rd.MessagesAfterPersist)
	}
	if n.Status().HardState.LearnedCommit != 0 {
		t.Fatal("learned a commit index from a rejected message")
	}
	// Leader side.
	l := mustNode(t, testConfig(1, NewMemoryStorage(), 1, 2, 3), Boot{})
	if err := l.Campaign(); err != nil {
		t.Fatal(err)
	}
	for _, from := range []NodeID{2, 3} {
		if err := l.Step(Message{Type: MsgVoteResp, From: from, To: 1, Term: 2, Granted: true}); err != nil {
			t.Fatal(err)
		}
	}
	if l.Status().Role != RoleLeader {
		t.Fatal("not leader")
	}
	if err := l.Step(Message{Type: MsgAppResp, From: 2, To: 1, Term: 2, Success: true, MatchIndex: IndexMax}); err != nil {
		t.Fatal(err)
	}
	if st := l.Status(); st.Progress[2].Match != 0 || st.Commit != 0 {
		t.Fatalf("a match beyond the log was taken: %+v", st.Progress[2])
	}
	if err := l.Step(Message{Type: MsgAppResp, From: 2, To: 1, Term: 2, HintIndex: IndexMax, HintTerm: 2, Seq: 99}); err != nil {
		t.Fatal(err)
	}
	if p := l.Status().Progress[2]; p.Next < 1 || p.Next > l.Status().Last+1 {
		t.Fatalf("next %d outside [1, last+1]", p.Next)
	}
}

// TestWALFailure: a failed WAL makes the node step down, acknowledge
// nothing, grant no vote, refuse proposals, and keep saying so.
func TestWALFailure(t *testing.T) {
	st := NewMemoryStorage()
	n := mustNode(t, testConfig(1, st, 1), Boot{})
	if err := n.Campaign(); err != nil || n.Status().Role != RoleLeader {
		t.Fatalf("single voter did not lead: %v", err)
	}
	rd := n.Ready()
	if err := st.Append(rd.Entries); err != nil {
		t.Fatal(err)
	}
	n.Advance(AdvanceInfo{Failed: true, Reason: "EIO"})
	if s := n.Status(); s.Role != RoleFollower || !s.WALFailed {
		t.Fatalf("after failure: %+v", s)
	}
	if _, err := n.Propose([]byte("x")); err != ErrWALFailed {
		t.Fatalf("propose: %v", err)
	}
	if alertsOf(n.Ready(), AlertWALFailed) != 1 {
		t.Fatal("no alert")
	}
	alerts := 0
	for k := 0; k < 5*n.cfg.AlertTicks; k++ {
		n.Tick()
		alerts += alertsOf(n.Ready(), AlertWALFailed)
	}
	if alerts != 5 {
		t.Fatalf("%d alerts in 5 intervals", alerts)
	}
	if err := n.Campaign(); err != ErrWALFailed {
		t.Fatalf("campaign: %v", err)
	}
}

// TestLeaderCountsOnlyDurable: a single voter commits an entry only when
// its own WAL reports it durable; a durable report of another term (from
// before a truncation) is ignored.
func TestLeaderCountsOnlyDurable(t *testing.T) {
	st := NewMemoryStorage()
	n := mustNode(t, testConfig(1, st, 1), Boot{})
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Propose([]byte("a")); err != nil {
		t.Fatal(err)
	}
	rd := n.Ready()
	if err := st.Append(rd.Entries); err != nil {
		t.Fatal(err)
	}
	if len(rd.Committed) != 0 || n.Status().Commit != 0 {
		t.Fatal("committed before durable")
	}
	n.Advance(AdvanceInfo{DurableIndex: 2, DurableTerm: 1})
	if n.Status().Durable != 0 {
		t.Fatal("took a durable report of the wrong term")
	}
	n.Advance(AdvanceInfo{DurableIndex: 1, DurableTerm: 2})
	if n.Status().Commit != 1 {
		t.Fatalf("commit %d after durable 1", n.Status().Commit)
	}
	n.Advance(AdvanceInfo{DurableIndex: 2, DurableTerm: 2})
	if got := n.Ready().Committed; len(got) != 2 || string(got[1].Data) != "a" {
		t.Fatalf("committed %v", got)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		b := MarshalMessage(&m)
		got, err := UnmarshalMessage(b, 256, 1<<20)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if string(MarshalMessage(&got)) != string(b) || got.String() != m.String() {
			t.Fatalf("round trip changed %v into %v", m, got)
		}
		for k := range b {
			c := append([]byte(nil), b...)
			c[k] ^= 0x10
			if _, err := UnmarshalMessage(c, 256, 1<<20); err == nil {
				t.Fatalf("%v: a flipped bit at %d passed", m, k)
			}
		}
		if _, err := UnmarshalMessage(append(b, 0), 256, 1<<20); err == nil {
			t.Fatal("trailing byte passed")
		}
	}
}

func sampleMessages() []Message {
	return []Message{
		{Type: MsgVote, From: 1, To: 2, Term: 3, LastLogIndex: 5, LastLogTerm: 2, Transfer: true},
		{Type: MsgVoteResp, From: 2, To: 1, Term: 3, Granted: true},
		{Type: MsgVoteResp, From: 2, To: 1, Term: 3, Granted: true, Ambiguous: true},
		{Type: MsgPreVoteResp, From: 2, To: 1, Term: 4, Granted: true, Ambiguous: true},
		{Type: MsgPreVote, From: 1, To: 2, Term: 4, LastLogIndex: 5, LastLogTerm: 2},
		{Type: MsgPreVoteResp, From: 2, To: 1, Term: 4},
		{Type: MsgApp, From: 1, To: 2, Term: 3, PrevLogIndex: 1, PrevLogTerm: 1, Commit: 2, LeaderCommit: 5, Round: 7, Seq: 9,
			Entries: []Entry{{Index: 2, Term: 2, Data: []byte("x")}, {Index: 3, Term: 3}}},
		{Type: MsgApp, From: 1, To: 2, Term: 3, PrevLogIndex: 3, PrevLogTerm: 3, Commit: 3, LeaderCommit: 3},
		{Type: MsgAppResp, From: 2, To: 1, Term: 3, Success: true, MatchIndex: 3, Round: 7, Seq: 9},
		{Type: MsgAppResp, From: 2, To: 1, Term: 3, HintIndex: 1, HintTerm: 1, Seq: 2},
		{Type: MsgAppRespPassive, From: 2, To: 1, Term: 3, Success: true, MatchIndex: 3, Round: 7, Seq: 9},
		{Type: MsgAppRespPassive, From: 2, To: 1, Term: 3, HintIndex: 1, HintTerm: 1, Seq: 2},
		{Type: MsgTimeoutNow, From: 1, To: 2, Term: 3},
	}
}

// heartbeatAckLoop is a leader handling a duplicate acknowledgment that
// changes nothing: the hot path of a busy leader.
func heartbeatAckLoop(tb testing.TB, sink TraceSink) (*Node, Message) {
	cfg := testConfig(1, NewMemoryStorage(), 1, 2, 3)
	cfg.Trace = sink
	n, err := NewNode(cfg, Boot{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.Campaign(); err != nil {
		tb.Fatal(err)
	}
	if err := n.Step(Message{Type: MsgVoteResp, From: 2, To: 1, Term: 2, Granted: true}); err != nil {
		tb.Fatal(err)
	}
	n.Ready()
	ack := Message{Type: MsgAppResp, From: 2, To: 1, Term: 2, Success: true, MatchIndex: 1, Seq: 1}
	if err := n.Step(ack); err != nil {
		tb.Fatal(err)
	}
	n.Ready()
	return n, ack
}

type discard struct{}

func (discard) Event(trace.Event) {}

// TestTraceOffAllocatesNothing: with Config.Trace nil the hot path does not
// allocate; with a sink it does (the events).
func TestTraceOffAllocatesNothing(t *testing.T) {
	n, ack := heartbeatAckLoop(t, nil)
	if a := testing.AllocsPerRun(1000, func() { _ = n.Step(ack) }); a != 0 {
		t.Fatalf("%v allocations per step with tracing off", a)
	}
	n, ack = heartbeatAckLoop(t, discard{})
	if a := testing.AllocsPerRun(100, func() { _ = n.Step(ack) }); a == 0 {
		t.Fatal("tracing on allocates nothing: the test measures nothing")
	}
}

func BenchmarkStepTraceOff(b *testing.B) {
	n, ack := heartbeatAckLoop(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		_ = n.Step(ack)
	}
}

func BenchmarkStepTraceOn(b *testing.B) {
	n, ack := heartbeatAckLoop(b, discard{})
	b.ReportAllocs()
	for b.Loop() {
		_ = n.Step(ack)
	}
}

// TestPassiveReportAheadOfNext: in replicate state a passive report may
// cover entries the leader has not sent in this term (the follower held
// them from an earlier term); the leader then sends from after the
// report, not the reported entry again.
func TestPassiveReportAheadOfNext(t *testing.T) {
	n := fuzzLeader(t) // log 1/1 1/2 2/3 3/4, leading term 3
	n.Ready()
	pr := n.progressOf(3)
	pr.BecomeReplicate()
	pr.Sent(2, 0, 2) // entries 1..2 in flight: next 3
	if pr.Next != 3 {
		t.Fatalf("set-up: next %d", pr.Next)
	}
	if err := n.Step(Message{Type: MsgAppRespPassive, From: 3, To: 1, Term: 3, Success: true, MatchIndex: 3}); err != nil {
		t.Fatal(err)
	}
	rd := n.Ready()
	var sent []Message
	for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
		if m.To == 3 && m.Type == MsgApp {
			sent = append(sent, m)
		}
	}
	if len(sent) != 1 || sent[0].PrevLogIndex != 3 || len(sent[0].Entries) != 1 || sent[0].Entries[0].Index != 4 {
		t.Fatalf("after a passive report of 3: sent %v, want entry 4 after 3", sent)
	}
}

// TestPassiveReportBeyondLast: a passive report of an index beyond the
// leader's last is a protocol alert and changes nothing in the leader's
// view of that member.
func TestPassiveReportBeyondLast(t *testing.T) {
	n := fuzzLeader(t)
	n.Ready()
	before := n.Status().Progress[3]
	if err := n.Step(Message{Type: MsgAppRespPassive, From: 3, To: 1, Term: 3, Success: true, MatchIndex: 99}); err != nil {
		t.Fatal(err)
	}
	if after := n.Status().Progress[3]; after != before {
		t.Fatalf("progress of 3 after a report of 99 (last %d): %+v, was %+v", n.Status().Last, after, before)
	}
}

// TestReportSnapshotDeliveredProbesAfterIt: once a snapshot at index is
// delivered, the leader probes from index+1: its next AppendEntries to that
// follower continues from the snapshot.
func TestReportSnapshotDeliveredProbesAfterIt(t *testing.T) {
	n := fuzzLeader(t) // log 1/1 1/2 2/3 3/4
	n.Ready()
	n.progressOf(3).BecomeSnapshot(2)
	n.ReportSnapshot(3, 2, true)
	rd := n.Ready()
	var sent []Message
	for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
		if m.To == 3 && m.Type == MsgApp {
			sent = append(sent, m)
		}
	}
	if len(sent) != 1 || sent[0].PrevLogIndex != 2 {
		t.Fatalf("after the snapshot at 2 was delivered: sent %v, want one AppendEntries after 2", sent)
	}
}

// TestCompactIdempotent: compacting again at the compaction point is a
// no-op, below it an error.
func TestCompactIdempotent(t *testing.T) {
	n := mustNode(t, testConfig(1, logOf(1, 1, 1)), Boot{HardState: HardState{Term: 1}, Verdict: VerdictClean,
		Applied: 2, Snapshot: SnapshotInfo{Index: 2, Term: 1}})
	for k := 0; k < 2; k++ {
		if err := n.Compact(2); err != nil {
			t.Fatalf("compact through 2, time %d: %v", k+1, err)
		}
	}
	if err := n.Compact(1); err == nil {
		t.Fatal("compact through 1, below the compaction point 2, accepted")
	}
}

// TestMemoryStorageAppendBounds: an append must start inside the log or
// right after it: not at or below the base, not beyond a gap.
func TestMemoryStorageAppendBounds(t *testing.T) {
	st := logOf(1, 1, 1)
	for _, first := range []uint64{0, 5, 6} {
		if err := st.Append([]Entry{{Index: first, Term: 1}}); err == nil {
			t.Errorf("append at %d to a log of 3 accepted", first)
		}
	}
	if err := st.Append([]Entry{{Index: 4, Term: 1}}); err != nil {
		t.Fatalf("append at 4: %v", err)
	}
	if err := st.Append([]Entry{{Index: 2, Term: 2}}); err != nil { // replaces 2..4
		t.Fatalf("append at 2: %v", err)
	}
	if last := st.LastIndex(); last != 2 {
		t.Fatalf("last %d after the append at 2, want 2", last)
	}
}
