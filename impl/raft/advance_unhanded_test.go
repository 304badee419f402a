package raft

import "testing"

// The WAL can make durable only what the node handed it (Ready.Entries): a
// report of a durable index beyond that is a storage bug, alerted
// (AlertStorage) and ignored, even for an index the log holds.
func TestAdvanceBeyondHandedIsIgnored(t *testing.T) {
	n := mustNode(t, testConfig(1, NewMemoryStorage(), 1), Boot{})
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	rd := n.Ready() // hands the leader's no-op entry
	if len(rd.Entries) == 0 {
		t.Fatalf("the new leader's Ready hands no entries: %+v", rd)
	}
	handed := rd.Entries[len(rd.Entries)-1]
	n.Advance(AdvanceInfo{DurableIndex: handed.Index, DurableTerm: handed.Term})
	n.Ready()
	if _, err := n.Propose([]byte("a")); err != nil {
		t.Fatal(err)
	}
	st := n.Status()
	if st.Last != handed.Index+1 || st.Durable != handed.Index {
		t.Fatalf("after a proposal: last %d durable %d, want %d and %d", st.Last, st.Durable, handed.Index+1, handed.Index)
	}
	n.Advance(AdvanceInfo{DurableIndex: st.Last, DurableTerm: st.HardState.Term}) // not handed yet
	if got := n.Status().Durable; got != handed.Index {
		t.Fatalf("durable %d after a report beyond what was handed, want %d", got, handed.Index)
	}
	if alertsOf(n.Ready(), AlertStorage) != 1 {
		t.Fatal("no storage alert for a durable report beyond what was handed")
	}
}
