package coretrace

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

// snapHarness drives cores over MemoryStorage as a runtime would, with
// snapshots and compaction (rafttest has neither): every Ready handled at
// once, hard state persisted at once (Persisted), the log durable at once
// (Advance), a MsgSnap delivered whole (StepSnapshot with the sender's
// trace prefix, the sender told: ReportSnapshot). Every node traces into
// one trace, which spec.CheckTrace replays.
type snapHarness struct {
	t       *testing.T
	ids     []raft.NodeID
	nodes   map[raft.NodeID]*raft.Node
	st      map[raft.NodeID]*raft.MemoryStorage
	applied map[raft.NodeID][]string // the state machine: term/data of every entry applied, by index-1
	boots   map[raft.NodeID]int
	down    map[raft.NodeID]bool
	queue   []raft.Message
	events  []trace.Event
	// repairSnaps counts the MsgSnap sent as a repair's answer (they leave
	// after the hard state is persisted); installs the installs.
	repairSnaps, installs int
}

type harnessSink struct{ h *snapHarness }

func (s harnessSink) Event(e trace.Event) {
	e.V, e.Seq = trace.Version, len(s.h.events)
	s.h.events = append(s.h.events, e)
}

func newSnapHarness(t *testing.T, n int) *snapHarness {
	h := &snapHarness{t: t, nodes: map[raft.NodeID]*raft.Node{}, st: map[raft.NodeID]*raft.MemoryStorage{},
		applied: map[raft.NodeID][]string{}, boots: map[raft.NodeID]int{}, down: map[raft.NodeID]bool{}}
	for k := 1; k <= n; k++ {
		h.ids = append(h.ids, raft.NodeID(k))
	}
	tc, err := raft.TraceConfig(raft.TraceParams{Voters: h.ids, Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	h.events = append(h.events, trace.Event{V: trace.Version, Action: "Init", Config: tc})
	for _, id := range h.ids {
		h.st[id] = raft.NewMemoryStorage()
		h.boot(id, raft.Boot{Verdict: raft.VerdictClean})
	}
	return h
}

func (h *snapHarness) boot(id raft.NodeID, b raft.Boot) {
	h.t.Helper()
	cfg := raft.Config{ID: id, Voters: h.ids, ElectionTick: 10, HeartbeatTick: 1, PeerRepair: true,
		Rand: rand.New(rand.NewPCG(uint64(id), uint64(h.boots[id]))), Storage: h.st[id], Trace: harnessSink{h}}
	h.boots[id]++
	n, err := raft.NewNode(cfg, b)
	if err != nil {
		h.t.Fatalf("boot n%d: %v", id, err)
	}
	h.nodes[id] = n
}

// settle handles Readies and deliveries until nothing is left.
func (h *snapHarness) settle() {
	h.t.Helper()
	for rounds := 0; ; rounds++ {
		if rounds > 100000 {
			h.t.Fatal("no quiescence")
		}
		busy := false
		for _, id := range h.ids {
			for h.nodes[id].HasReady() {
				busy = true
				h.process(id, h.nodes[id].Ready())
			}
		}
		if len(h.queue) > 0 {
			busy = true
			m := h.queue[0]
			h.queue = h.queue[1:]
			h.deliver(m)
		}
		if !busy {
			return
		}
	}
}

func (h *snapHarness) process(id raft.NodeID, rd raft.Ready) {
	h.t.Helper()
	n, st := h.nodes[id], h.st[id]
	if rd.Snapshot != nil {
		// The install: the state machine becomes the snapshot's (a prefix
		// of every state machine that applied that far), the log the empty
		// log after it.
		s := *rd.Snapshot
		st.Reset(s.Index, s.Term)
		h.applied[id] = append([]string(nil), h.appliedThrough(s.Index)...)
		h.installs++
	}
	if rd.TruncateFrom > 0 {
		if err := st.Truncate(rd.TruncateFrom); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := st.Append(rd.Entries); err != nil {
		h.t.Fatal(err)
	}
	n.Persisted()
	for _, e := range rd.Committed {
		if e.Index != uint64(len(h.applied[id]))+1 {
			h.t.Fatalf("n%d applies %d after %d", id, e.Index, len(h.applied[id]))
		}
		h.applied[id] = append(h.applied[id], fmt.Sprintf("%d/%s", e.Term, e.Data))
	}
	for _, m := range rd.MessagesAfterPersist {
		if m.Type == raft.MsgSnap { // a leader's leaves with Messages
			h.repairSnaps++
		}
	}
	h.queue = append(h.queue, rd.Messages...)
	h.queue = append(h.queue, rd.MessagesAfterPersist...)
	if last := st.LastIndex(); last > 0 {
		t, err := st.Term(last)
		if err != nil {
			h.t.Fatal(err)
		}
		n.Advance(raft.AdvanceInfo{DurableIndex: last, DurableTerm: t})
	}
}

// appliedThrough is the state of a state machine that applied index
// entries: some node's that did.
func (h *snapHarness) appliedThrough(index uint64) []string {
	for _, id := range h.ids {
		if uint64(len(h.applied[id])) >= index {
			return h.applied[id][:index]
		}
	}
	h.t.Fatalf("no state machine applied %d entries", index)
	return nil
}

func (h *snapHarness) deliver(m raft.Message) {
	h.t.Helper()
	if h.down[m.To] || h.down[m.From] {
		return
	}
	if m.Type != raft.MsgSnap {
		if err := h.nodes[m.To].Step(m); err != nil {
			h.t.Fatalf("step %v: %v", m, err)
		}
		return
	}
	from := h.nodes[m.From]
	if _, err := h.nodes[m.To].StepSnapshot(m, from.TracePrefix(m.PrevLogIndex)); err != nil {
		h.t.Fatalf("StepSnapshot %v: %v", m, err)
	}
	from.ReportSnapshot(m.To, m.PrevLogIndex, true)
}

func (h *snapHarness) tick(k int) {
	for range k {
		for _, id := range h.ids {
			if !h.down[id] {
				h.nodes[id].Tick()
			}
		}
		h.settle()
	}
}

func (h *snapHarness) leader() raft.NodeID {
	for _, id := range h.ids {
		if !h.down[id] && h.nodes[id].Status().Role == raft.RoleLeader {
			return id
		}
	}
	return raft.None
}

func (h *snapHarness) propose(k int) {
	h.t.Helper()
	l := h.leader()
	if l == raft.None {
		h.t.Fatal("no leader to propose to")
	}
	for i := 0; i < k; i++ {
		if _, err := h.nodes[l].Propose([]byte(fmt.Sprintf("w%d", len(h.applied[l])+i))); err != nil {
			h.t.Fatal(err)
		}
		h.settle()
	}
}

// snapshotAndCompact makes a snapshot of id at its applied index and
// compacts storage and core through keep entries below it.
func (h *snapHarness) snapshotAndCompact(id raft.NodeID, keep uint64) raft.SnapshotInfo {
	h.t.Helper()
	n, st := h.nodes[id], h.st[id]
	idx := uint64(len(h.applied[id]))
	term, err := st.Term(idx)
	if err != nil {
		h.t.Fatal(err)
	}
	s := raft.SnapshotInfo{Index: idx, Term: term}
	if err := n.SnapshotMade(s); err != nil {
		h.t.Fatal(err)
	}
	through := idx - min(idx, keep)
	if err := st.Compact(through); err != nil {
		h.t.Fatal(err)
	}
	if err := n.Compact(through); err != nil {
		h.t.Fatal(err)
	}
	return s
}

// corrupt reboots id after a corruption that kept only the first keep
// entries of its durable log: the WAL's TRUNCATED verdict and mark, the
// hard state kept (a record of its own), the state machine rebuilt from
// the log.
func (h *snapHarness) corrupt(id raft.NodeID, keep uint64) {
	h.t.Helper()
	hs, st := h.nodes[id].Status().HardState, h.st[id]
	ents, err := st.Entries(st.FirstIndex(), keep+1, math.MaxUint64)
	if err != nil {
		h.t.Fatal(err)
	}
	ns := raft.NewMemoryStorage()
	if err := ns.Append(ents); err != nil {
		h.t.Fatal(err)
	}
	hs.TruncatedAtTerm = hs.Term // the WAL's mark, as impl/wal writes it at recovery
	h.st[id], h.applied[id] = ns, nil
	h.boot(id, raft.Boot{HardState: hs, Verdict: raft.VerdictTruncated})
	h.settle()
}

// repairBySnapshotRun is issue 18's "TRUNCATED member behind the
// compaction point", traced: four members, n1 leads and commits 30
// entries; n1 and n2 snapshot and compact; n3 and n4 lose all but 3
// entries of their durable logs and boot TRUNCATED, the leader is cut off
// (n2 and the TRUNCATED members: no quorum of voters can elect anyone),
// then comes back. Each TRUNCATED member asks its peers, is below their
// compaction point, installs a peer's snapshot, takes the entries after
// it, and is released once both CLEAN voters answered; then a leader is
// elected with their votes and 3 more writes commit.
func repairBySnapshotRun(t *testing.T) *snapHarness {
	h := newSnapHarness(t, 4)
	if err := h.nodes[1].Campaign(); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if h.leader() != 1 {
		t.Fatalf("n1 not elected: %+v", h.nodes[1].Status())
	}
	h.propose(30)
	h.snapshotAndCompact(1, 2)
	h.snapshotAndCompact(2, 2)
	h.corrupt(3, 3)
	h.corrupt(4, 3)
	h.down[1] = true
	h.tick(45)
	for _, id := range []raft.NodeID{3, 4} {
		if v := h.nodes[id].Status().Verdict; v != "TRUNCATED" {
			t.Fatalf("n%d released with n1 silent: %s", id, v)
		}
	}
	h.down[1] = false
	for k := 0; k < 200 && !(h.leader() != raft.None && h.clean(3) && h.clean(4)); k++ {
		h.tick(1)
	}
	for _, id := range []raft.NodeID{3, 4} {
		if !h.clean(id) {
			t.Fatalf("n%d not repaired: %+v", id, h.nodes[id].Status())
		}
	}
	if h.leader() == raft.None {
		t.Fatal("no leader after the repairs")
	}
	h.propose(3)
	h.tick(2)
	return h
}

func (h *snapHarness) clean(id raft.NodeID) bool { return h.nodes[id].Status().Verdict == "CLEAN" }

// TestRepairBySnapshotTrace: the repair of TRUNCATED members behind their
// peers' compaction point, by a peer's snapshot (spec SendRepairSnapshot,
// then InstallSnapshot, then the entries answer counted), is a behaviour
// of the spec: the trace is accepted, encoded and read back as raftspec
// check-trace reads it. Every state machine ends equal.
func TestRepairBySnapshotTrace(t *testing.T) {
	h := repairBySnapshotRun(t)
	if h.repairSnaps < 2 || h.installs < 2 {
		t.Fatalf("%d repair snapshots sent, %d installed: want the repairs of n3 and n4 by snapshot", h.repairSnaps, h.installs)
	}
	counts := map[string]int{}
	for _, e := range h.events {
		counts[e.Action+branchSuffix(e.Branch)]++
	}
	if counts["SendRepairSnapshot"] < 2 || counts["InstallSnapshot"] < 2 || counts["HandleRepairResponse"] == 0 {
		t.Fatalf("the trace has no repair by snapshot: %v", counts)
	}
	if err := spec.CheckTrace(h.events); err != nil {
		t.Fatalf("spec.CheckTrace rejects the trace (%d events): %v", len(h.events), err)
	}
	if n, err := spec.CheckTraceReader(bytes.NewReader(encodeEvents(t, h.events))); err != nil {
		t.Fatalf("the encoded trace is rejected after %d events: %v", n, err)
	}
	want := h.applied[h.leader()]
	if len(want) < 33 {
		t.Fatalf("the leader applied %d entries, want 33", len(want))
	}
	for _, id := range h.ids {
		if !slices.Equal(h.applied[id], want) {
			t.Errorf("n%d applied %d entries, the leader %d (or they differ)", id, len(h.applied[id]), len(want))
		}
	}
	t.Logf("%d events; %v", len(h.events), counts)
}

// repairSnapMutations alter the repair by snapshot in the trace; each
// result must be rejected at the altered event.
var repairSnapMutations = []traceMutation{
	{"beyond-commit", "a peer answers with a snapshot beyond its commit index", func(es []trace.Event) int {
		return pickFirst(es, func(e *trace.Event) bool { return e.Action == "SendRepairSnapshot" },
			func(e *trace.Event) { *e.Cut = e.State.CommitIndex + 1 })
	}},
	{"by-truncated", "a TRUNCATED member answers with a snapshot (only a CLEAN one answers)", func(es []trace.Event) int {
		return pickFirst(es, func(e *trace.Event) bool { return e.Action == "SendRepairSnapshot" },
			func(e *trace.Event) { one := 1; e.State.Verdict, e.State.TruncatedAtTerm = "TRUNCATED", &one })
	}},
	{"released-at-install", "the install of a peer's snapshot releases the member (CLEAN before any answer is counted)", func(es []trace.Event) int {
		return pickFirst(es, func(e *trace.Event) bool {
			return e.Action == "InstallSnapshot" && e.State.Verdict == "TRUNCATED"
		}, func(e *trace.Event) { zero := 0; e.State.Verdict, e.State.TruncatedAtTerm = "CLEAN", &zero })
	}},
	{"install-unsent", "a member installs a repair snapshot before the peer sent it", func(es []trace.Event) int {
		for k := range es {
			if es[k].Action != "SendRepairSnapshot" {
				continue
			}
			for j := k + 1; j < len(es); j++ {
				if es[j].Action == "InstallSnapshot" && es[j].Node == es[k].Peer {
					moved := es[j]
					copy(es[k+1:j+1], es[k:j])
					es[k] = moved
					for x := k; x <= j; x++ {
						es[x].Seq = x
					}
					return k
				}
			}
		}
		return -1
	}},
}

// TestRepairBySnapshotTraceMutations: the repair by snapshot's trace with
// one step altered is rejected, at that step.
func TestRepairBySnapshotTraceMutations(t *testing.T) {
	h := repairBySnapshotRun(t)
	b := encodeEvents(t, h.events)
	checkMutations(t, b, repairSnapMutations)
}
