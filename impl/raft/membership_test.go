package raft

import (
	"errors"
	"slices"
	"testing"

	"github.com/durableraft/durableraft/impl/raft/tracker"
)

func TestMembershipEncoding(t *testing.T) {
	for _, m := range []Membership{
		{Voters: []NodeID{1}},
		{Voters: []NodeID{1, 2, 3}, Learners: []NodeID{4, 900}, Removed: []NodeID{5}},
		{Voters: []NodeID{1 << 40}, Removed: []NodeID{1, 2}},
	} {
		data := EncodeMembership(m)
		if !IsConfigEntry(data) {
			t.Fatalf("%v: not a configuration entry", m)
		}
		got, err := DecodeMembership(data)
		if err != nil || got.String() != m.String() {
			t.Errorf("%v: decoded %v, %v", m, got, err)
		}
	}
	good := EncodeMembership(Membership{Voters: []NodeID{1, 2}, Learners: []NodeID{3}})
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"no magic", []byte("put x")},
		{"truncated", good[:len(good)-1]},
		{"trailing byte", append(slices.Clone(good), 0)},
		{"no voters", EncodeMembership(Membership{Learners: []NodeID{3}})},
		{"unsorted", EncodeMembership(Membership{Voters: []NodeID{2, 1}})},
		{"learner also voter", EncodeMembership(Membership{Voters: []NodeID{1}, Learners: []NodeID{1}})},
		{"voter also removed", EncodeMembership(Membership{Voters: []NodeID{1}, Removed: []NodeID{1}})},
		{"id 0", EncodeMembership(Membership{Voters: []NodeID{0, 1}})},
		// 1 as the two-byte varint 0x81 0x00: decodes, not canonical.
		{"non-canonical varint", append(append(slices.Clone(configMagic), 1, 0x81, 0x00), 0, 0)},
		{"huge count", append(slices.Clone(configMagic), 0xff, 0xff, 0x03)},
	} {
		if _, err := DecodeMembership(c.data); err == nil {
			t.Errorf("%s: decoded", c.name)
		}
	}
}

// FuzzDecodeMembership: whatever decodes is valid and is its own encoding.
func FuzzDecodeMembership(f *testing.F) {
	f.Add(EncodeMembership(Membership{Voters: []NodeID{1, 2, 3}, Learners: []NodeID{4}, Removed: []NodeID{5}}))
	f.Add(EncodeMembership(Membership{Voters: []NodeID{7}}))
	f.Add(append(slices.Clone(configMagic), 1, 0x81, 0x00, 0, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMembership(data)
		if err != nil {
			return
		}
		if err := m.Valid(); err != nil {
			t.Fatalf("decoded an invalid configuration %v: %v", m, err)
		}
		if got := EncodeMembership(m); string(got) != string(data) {
			t.Fatalf("%x decodes to %v, which encodes to %x", data, m, got)
		}
	})
}

// soloLeader is node 1, the only voter, leading term 2 with its no-op
// durable and committed.
func soloLeader(t *testing.T) (*Node, *MemoryStorage) {
	t.Helper()
	st := NewMemoryStorage()
	n := mustNode(t, testConfig(1, st, 1), Boot{Verdict: VerdictClean})
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ChangeConfig(ConfChange{Kind: ConfAddLearner, ID: 2}); !errors.Is(err, ErrConfigOwnTerm) {
		t.Fatalf("a change before the no-op commits: %v", err)
	}
	persistAll(t, n, st)
	return n, st
}

// persistAll hands out every Ready to st and reports it durable.
func persistAll(t *testing.T, n *Node, st *MemoryStorage) {
	t.Helper()
	for n.HasReady() {
		rd := n.Ready()
		if rd.TruncateFrom > 0 {
			if err := st.Truncate(rd.TruncateFrom); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Append(rd.Entries); err != nil {
			t.Fatal(err)
		}
		n.Persisted()
		if last := st.LastIndex(); last > 0 {
			tm, _ := st.Term(last)
			n.Advance(AdvanceInfo{DurableIndex: last, DurableTerm: tm})
		}
	}
}

// TestChangeConfigRefusals: every refusal of ChangeConfig is typed and
// changes nothing; the accepted changes are in force at once.
func TestChangeConfigRefusals(t *testing.T) {
	n, st := soloLeader(t)
	follower := mustNode(t, testConfig(2, NewMemoryStorage(), 1, 2), Boot{Verdict: VerdictClean})
	if _, err := follower.ChangeConfig(ConfChange{Kind: ConfAddLearner, ID: 3}); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a follower's change: %v", err)
	}
	steps := []struct {
		ch   ConfChange
		err  error
		want string // the configuration in force after it
	}{
		{ConfChange{ConfAddLearner, 1}, ErrMember, "voters=(1)"},
		{ConfChange{ConfPromote, 2}, ErrNotMember, "voters=(1)"},
		{ConfChange{ConfRemove, 1}, ErrLastVoter, "voters=(1)"},
		{ConfChange{ConfAddLearner, 0}, tracker.ErrInvalidID, "voters=(1)"},
		{ConfChange{ConfAddLearner, 2}, nil, "voters=(1) learners=(2)"},
		{ConfChange{ConfAddLearner, 3}, ErrConfigPending, "voters=(1) learners=(2)"},
		{ConfChange{ConfPromote, 1}, ErrConfigPending, "voters=(1) learners=(2)"},
	}
	for _, s := range steps {
		last := n.Status().Last
		_, err := n.ChangeConfig(s.ch)
		if !errors.Is(err, s.err) || n.Membership().String() != s.want {
			t.Fatalf("%+v: %v, in force %v; want %v, %s", s.ch, err, n.Membership(), s.err, s.want)
		}
		if err != nil && n.Status().Last != last {
			t.Fatalf("%+v refused but the log grew", s.ch)
		}
	}
	persistAll(t, n, st) // the single voter commits the change alone: learners do not count
	if st := n.Status(); st.Commit != st.Last || !slices.Equal(st.Learners, []NodeID{2}) {
		t.Fatalf("after the learner's addition: %+v", st)
	}
	if _, err := n.ChangeConfig(ConfChange{ConfPromote, 2}); !errors.Is(err, ErrLearnerBehind) {
		t.Fatalf("promoting a learner that acknowledged nothing: %v", err)
	}
	if _, err := n.ChangeConfig(ConfChange{ConfPromote, 1}); !errors.Is(err, ErrNotLearner) {
		t.Fatalf("promoting a voter: %v", err)
	}
	if _, err := n.ChangeConfig(ConfChange{ConfRemove, 2}); err != nil {
		t.Fatal(err)
	}
	persistAll(t, n, st)
	if _, err := n.ChangeConfig(ConfChange{ConfAddLearner, 2}); !errors.Is(err, ErrRemovedID) {
		t.Fatalf("re-adding a removed id: %v", err)
	}
	if _, err := n.Propose(EncodeMembership(Membership{Voters: []NodeID{1, 9}})); !errors.Is(err, ErrReservedData) {
		t.Fatalf("a proposal forging a configuration: %v", err)
	}
	if err := n.TransferLeadership(2); !errors.Is(err, ErrNotVoter) {
		t.Fatalf("transfer to a removed member: %v", err)
	}
}

// TestBootConfiguration: at boot the configuration in force is the latest
// entry of storage after the snapshot, else the snapshot's, else the
// initial one.
func TestBootConfiguration(t *testing.T) {
	c1 := Membership{Voters: []NodeID{1, 2, 3}, Learners: []NodeID{4}}
	c2 := Membership{Voters: []NodeID{1, 2, 3, 4}}
	st := NewMemoryStorage()
	if err := st.Append([]Entry{{1, 1, nil}, {2, 1, EncodeMembership(c1)}, {3, 1, []byte("x")}, {4, 2, EncodeMembership(c2)}, {5, 2, nil}}); err != nil {
		t.Fatal(err)
	}
	hs := HardState{Term: 2}
	n := mustNode(t, testConfig(2, st), Boot{HardState: hs, Verdict: VerdictClean, Applied: 0})
	if got := n.Membership().String(); got != c2.String() {
		t.Fatalf("in force %s, want %s", got, c2)
	}
	for _, c := range []struct {
		index uint64
		want  string
	}{{1, "voters=(1 2 3)"}, {2, c1.String()}, {3, c1.String()}, {4, c2.String()}, {5, c2.String()}} {
		if m, err := n.MembershipAt(c.index); err != nil || m.String() != c.want {
			t.Errorf("at %d: %v %v, want %s", c.index, m, err, c.want)
		}
	}
	// A snapshot at 3 (its configuration c1) and storage compacted through
	// it: the entry at 4 is still read.
	st2 := st.Clone()
	if err := st2.Compact(3); err != nil {
		t.Fatal(err)
	}
	n2 := mustNode(t, testConfig(2, st2), Boot{HardState: hs, Verdict: VerdictClean, Applied: 3,
		Snapshot: SnapshotInfo{Index: 3, Term: 1}, Membership: &c1})
	if got := n2.Membership().String(); got != c2.String() {
		t.Fatalf("after a snapshot: in force %s, want %s", got, c2)
	}
	if m, err := n2.MembershipAt(3); err != nil || m.String() != c1.String() {
		t.Errorf("at the snapshot: %v %v", m, err)
	}
	if err := st2.Truncate(4); err != nil {
		t.Fatal(err)
	}
	n3 := mustNode(t, testConfig(2, st2), Boot{HardState: hs, Verdict: VerdictClean, Applied: 3,
		Snapshot: SnapshotInfo{Index: 3, Term: 1}, Membership: &c1})
	if got := n3.Membership().String(); got != c1.String() {
		t.Fatalf("the snapshot's configuration: in force %s, want %s", got, c1)
	}
	bad := Membership{Voters: []NodeID{2, 1}}
	if _, err := NewNode(testConfig(2, st2), Boot{HardState: hs, Verdict: VerdictClean, Applied: 3,
		Snapshot: SnapshotInfo{Index: 3, Term: 1}, Membership: &bad}); err == nil {
		t.Fatal("booted with an invalid snapshot configuration")
	}
}

// TestSnapshotCarriesConfig: a follower that catches up by a snapshot
// takes the configuration the snapshot records, though its log never held
// the entry; compaction keeps the configuration in force.
func TestSnapshotCarriesConfig(t *testing.T) {
	c := newSnapCluster(t, 4, false)
	c.elect(1)
	c.propose(3)
	c.down[3] = true
	if _, err := c.leader().ChangeConfig(ConfChange{ConfRemove, 4}); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.propose(10)
	want := "voters=(1 2 3) removed=(4)"
	c.snapshotAndCompact(1, 2)
	if got := c.nodes[1].Membership().String(); got != want {
		t.Fatalf("leader after compaction: %s", got)
	}
	c.down[3] = false
	c.tick(3)
	c.propose(2)
	if c.installs != 1 {
		t.Fatalf("%d installs", c.installs)
	}
	if got := c.nodes[3].Membership().String(); got != want {
		t.Fatalf("n3 after the install: %s, want %s", got, want)
	}
	// A MsgSnap with a bad configuration is refused.
	m := Message{Type: MsgSnap, From: 1, To: 3, Term: 2, PrevLogIndex: 30, PrevLogTerm: 2, LeaderCommit: 30,
		Entries: []Entry{{Index: 30, Term: 2, Data: EncodeMembership(Membership{Voters: []NodeID{3, 1}})}}}
	if _, err := c.nodes[3].StepSnapshot(m, nil); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("a snapshot with a bad configuration: %v", err)
	}
}

// TestLearnerNeverCampaigns: a joining node and a learner tick forever
// without an election; Campaign refuses.
func TestLearnerNeverCampaigns(t *testing.T) {
	cfg := testConfig(4, NewMemoryStorage(), 1, 2, 3)
	if _, err := NewNode(cfg, Boot{Verdict: VerdictClean}); err == nil {
		t.Fatal("a node outside the voters booted without Joining")
	}
	cfg.Joining = true
	n := mustNode(t, cfg, Boot{Verdict: VerdictClean})
	for range 1000 {
		n.Tick()
	}
	if st := n.Status(); st.Role != RoleFollower || st.HardState.Term != 1 || n.HasReady() && len(n.Ready().Messages) > 0 {
		t.Fatalf("a joining node campaigned: %+v", st)
	}
	if err := n.Campaign(); !errors.Is(err, ErrNotVoter) {
		t.Fatalf("Campaign of a non-voter: %v", err)
	}
}
