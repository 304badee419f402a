package transport

import (
	"slices"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// TestSetPeers: the peer set follows the configuration in force. Node 1
// starts sending to 2 only; SetPeers adds 3 (its writer dials it and a
// message reaches it) and removes 2 (its writer stops, its outbound
// connection closes, and what is sent to it is dropped as to an unknown
// peer); an id without an address is reported.
func TestSetPeers(t *testing.T) {
	ns := cluster(t, []raft.NodeID{1, 2, 3}, nil)
	vote := func(to raft.NodeID) []replica.Message {
		return []replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: to, Term: 1}}}
	}
	if noAddr := ns[1].tr.SetPeers([]raft.NodeID{1, 2}); noAddr != nil {
		t.Fatalf("no address for %v", noAddr)
	}
	ns[1].tr.Send(vote(3))
	if got := ns[1].tr.Stats().DroppedUnknownPeer.Load(); got != 1 {
		t.Fatalf("a message to a node outside the peer set: %d dropped", got)
	}
	ns[1].tr.Send(vote(2))
	waitFor(t, "delivery to 2", ns[2].in.changed, func() bool { return ns[2].in.count() == 1 })

	inbound := func() bool {
		for _, p := range ns[2].tr.Peers() {
			if p.ID == 1 {
				return p.Inbound
			}
		}
		return false
	}
	waitFor(t, "node 1's connection to 2", nil, inbound)
	if noAddr := ns[1].tr.SetPeers([]raft.NodeID{1, 3, 9}); !slices.Equal(noAddr, []raft.NodeID{9}) {
		t.Fatalf("ids without an address: %v", noAddr)
	}
	ns[1].tr.Send(vote(3))
	waitFor(t, "delivery to the new peer 3", ns[3].in.changed, func() bool { return ns[3].in.count() == 1 })
	ids := func() []raft.NodeID {
		var out []raft.NodeID
		for _, p := range ns[1].tr.Peers() {
			out = append(out, p.ID)
		}
		slices.Sort(out)
		return out
	}
	if got := ids(); !slices.Equal(got, []raft.NodeID{3}) {
		t.Fatalf("peers after the change: %v", got)
	}
	before := ns[1].tr.Stats().DroppedUnknownPeer.Load()
	ns[1].tr.Send(vote(2))
	if got := ns[1].tr.Stats().DroppedUnknownPeer.Load(); got != before+1 {
		t.Fatalf("a message to the removed peer 2: dropped %d -> %d", before, got)
	}
	// 2's inbound side sees node 1's connection close.
	waitFor(t, "the removed peer's connection to close", nil, func() bool { return !inbound() })
	if got := ns[2].in.count(); got != 1 {
		t.Fatalf("the removed peer received %d messages, want 1", got)
	}
}
