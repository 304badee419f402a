package raft

import (
	"fmt"
	"maps"
	"slices"
)

// The confirmation of a first boot (issue 18; spec/wipe.go is the rule and
// its explorer runs, docs/membership.md "A wiped member" the why).
//
// A member whose data directory was wiped and that restarts under its old
// id looks exactly like a first boot: term 1, no vote, an empty log. It
// may have voted, and acknowledged entries, in terms it no longer knows,
// so a first boot is UNCONFIRMED (Boot.FirstBoot, written by the driver
// with the new data directory) and an unconfirmed node is outside the
// protocol: every message but the confirmation's is dropped (the spec's
// DropMessage: no vote, no acknowledgment, no term raised), it never
// campaigns, and it asks every other voter of its configuration, every
// Config.ElectionTick ticks, with MsgFirstBoot (Seq: its incarnation, a
// random number of its data directory). A voter answers MsgFirstBootResp
// (Seq echoed, Round: its own incarnation), granted when it is PRISTINE
// (term at most 1, no vote, an empty log), UNCONFIRMED itself, or KNOWS
// this incarnation (it was confirmed with its yes). A yes from every other
// voter CONFIRMS the first boot: the node becomes an ordinary member and
// keeps the answers' incarnations as FirstBoot.Known. One no makes it LOST
// for good: a lost hard state (row L: passive, no vote, no campaign),
// reported until an operator replaces it under a new id.
//
// Why a message of the core and not a field of the transport's handshake:
// the answer is the core's state (its term, vote, log and confirmation),
// read at the moment it answers, the ask must be repeated until every
// voter answered, and the transport's handshake is read-only inbound and
// knows nothing of the protocol. The messages are no spec messages (no
// term is raised by them, nothing is traced); the spec's AnswerFirstBoot
// is the reply's effect at the asker.

// FirstBootState is where a data directory's first boot stands.
type FirstBootState uint8

// First-boot states.
const (
	// FirstBootUnconfirmed: not yet confirmed by the other voters.
	FirstBootUnconfirmed FirstBootState = iota + 1
	// FirstBootConfirmed: every other voter said yes; an ordinary member.
	FirstBootConfirmed
	// FirstBootLost: a voter said the cluster is past its first boot and
	// does not know this data directory: it was wiped. Passive for good.
	FirstBootLost
)

func (s FirstBootState) String() string {
	switch s {
	case FirstBootUnconfirmed:
		return "UNCONFIRMED"
	case FirstBootConfirmed:
		return "CONFIRMED"
	case FirstBootLost:
		return "WIPED"
	}
	return "FirstBootState(?)"
}

// FirstBoot is the durable record of a data directory's first boot
// (Boot.FirstBoot, Ready.FirstBoot). Nil in Boot: the driver does not
// confirm first boots (the node behaves as before issue 18).
type FirstBoot struct {
	Incarnation uint64 // nonzero, random, fixed for the data directory's life
	State       FirstBootState
	// Known: the incarnations of the voters whose yes confirmed it.
	Known map[NodeID]uint64
	// LostTo: the voter whose no made it lost (FirstBootLost only).
	LostTo NodeID
}

func (f *FirstBoot) clone() *FirstBoot {
	c := *f
	c.Known = maps.Clone(f.Known)
	return &c
}

// firstBootState is the node's part.
type firstBootState struct {
	rec      *FirstBoot        // nil: not confirming first boots
	answered map[NodeID]uint64 // the yes answers so far (volatile)
	elapsed  int               // ticks since the last ask
	changed  bool              // rec changed since the last Ready
}

// unconfirmed reports whether the node waits for its first boot's
// confirmation (and so takes no part in the protocol).
func (n *Node) unconfirmed() bool {
	return n.fb.rec != nil && n.fb.rec.State == FirstBootUnconfirmed && !n.has(BugWipedVotes)
}

// bootFirstBoot takes Boot.FirstBoot. A lost one is a lost hard state.
func (n *Node) bootFirstBoot(boot Boot) error {
	if boot.FirstBoot == nil {
		return nil
	}
	f := boot.FirstBoot
	if f.Incarnation == 0 || f.State < FirstBootUnconfirmed || f.State > FirstBootLost {
		return fmt.Errorf("raft: boot: first boot record %+v: want a nonzero incarnation and a state", *f)
	}
	n.fb.rec = f.clone()
	if f.State == FirstBootLost {
		n.hardStateLost = true
	}
	if n.unconfirmed() {
		n.askFirstBoot() // a single voter confirms itself at once
	}
	return nil
}

// tickFirstBoot asks again every ElectionTick ticks while unconfirmed.
func (n *Node) tickFirstBoot() {
	n.fb.elapsed++
	if n.fb.elapsed >= n.cfg.ElectionTick {
		n.askFirstBoot()
	}
}

// askFirstBoot sends MsgFirstBoot to every other voter that has not said
// yes, or confirms when none is left.
func (n *Node) askFirstBoot() {
	n.fb.elapsed = 0
	left := 0
	for _, v := range n.trk.Config.Voters {
		id := NodeID(v)
		if _, ok := n.fb.answered[id]; id == n.id || ok {
			continue
		}
		left++
		n.send(Message{Type: MsgFirstBoot, To: id, Term: n.hs.Term, Seq: n.fb.rec.Incarnation})
	}
	if left == 0 || n.quorumAnswered() {
		n.fb.rec.State = FirstBootConfirmed
		n.fb.rec.Known = maps.Clone(n.fb.answered)
		n.fb.changed = true
		n.fb.answered = nil
		n.resetElection()
		n.alert(AlertFirstBoot, "first boot CONFIRMED by every other voter (%d): an ordinary member from now on", len(n.fb.rec.Known))
	}
}

// firstBootYes is the answer to an asker of incarnation inc.
func (n *Node) firstBootYes(from NodeID, inc uint64) bool {
	pristine := n.hs.Term <= 1 && n.hs.Vote == None && n.log.last == 0 // (an empty log starts at 1: last >= first-1)
	return pristine || n.unconfirmed() || (n.fb.rec != nil && n.fb.rec.Known[from] == inc)
}

// stepFirstBoot handles the confirmation's messages; it reports whether m
// was one, or was dropped because the node is unconfirmed.
func (n *Node) stepFirstBoot(m *Message) bool {
	switch {
	case m.Type == MsgFirstBoot:
		var mine uint64
		if n.fb.rec != nil {
			mine = n.fb.rec.Incarnation
		}
		n.send(Message{Type: MsgFirstBootResp, To: m.From, Term: n.hs.Term, Seq: m.Seq, Round: mine, Granted: n.firstBootYes(m.From, m.Seq)})
		return true
	case m.Type == MsgFirstBootResp:
		if n.unconfirmed() && m.Seq == n.fb.rec.Incarnation && n.isVoter(m.From) {
			n.firstBootAnswer(m)
		}
		return true
	case n.unconfirmed():
		if m.Type == MsgVote || m.Type == MsgPreVote {
			n.votesRefused++
		}
		n.traceDrop(m) // outside the protocol until confirmed: the spec's DropMessage
		return true
	}
	return false
}

// firstBootAnswer takes a voter's answer.
func (n *Node) firstBootAnswer(m *Message) {
	if !m.Granted {
		n.fb.rec.State, n.fb.rec.LostTo = FirstBootLost, m.From
		n.fb.changed = true
		n.fb.answered = nil
		n.hardStateLost = true
		n.tr = nil // outside the spec from now on
		n.alertCondition(AlertHardStateLost, "WIPED: voter %d says the cluster is past its first boot and does not know this data directory (incarnation %016x): "+
			"this member's data directory was wiped; it never votes or campaigns again; replace it under a new id", m.From, n.fb.rec.Incarnation)
		n.evaluatePolicy(false)
		return
	}
	if n.fb.answered == nil {
		n.fb.answered = map[NodeID]uint64{}
	}
	n.fb.answered[m.From] = m.Round
	if !n.quorumAnswered() {
		for _, v := range n.trk.Config.Voters {
			if _, ok := n.fb.answered[NodeID(v)]; NodeID(v) != n.id && !ok {
				return
			}
		}
	}
	n.askFirstBoot()
}

// quorumAnswered is BugWipeConfirmQuorum's rule: yes from a majority of
// the voters, the node itself not counted.
func (n *Node) quorumAnswered() bool {
	if !n.has(BugWipeConfirmQuorum) {
		return false
	}
	yes := 0
	for _, v := range n.trk.Config.Voters {
		if _, ok := n.fb.answered[NodeID(v)]; ok && NodeID(v) != n.id {
			yes++
		}
	}
	return yes*2 > len(n.trk.Config.Voters)
}

// FirstBootStatus is the node's first-boot record (nil: not confirming).
func (n *Node) FirstBootStatus() *FirstBoot {
	if n.fb.rec == nil {
		return nil
	}
	return n.fb.rec.clone()
}

// forceNewCluster is Boot.ForceNewCluster (raftd --force-new-cluster, an
// operator's recovery after the permanent loss of a quorum): the node
// appends, in a new term, a configuration entry in which it is the only
// voter and every other member is removed, effective at once, so that it
// elects itself and commits everything its log holds. What it may lose or
// resurrect is the operator's to accept (docs/raftd.md): entries
// acknowledged by the old quorum that this log lacks are gone, and
// entries of this log that were never committed become committed. It is
// outside the spec: the node traces nothing.
func (n *Node) forceNewCluster() (Entry, error) {
	if n.hardStateLost {
		return Entry{}, fmt.Errorf("raft: force new cluster: %w", ErrHardStateLost)
	}
	old := n.trk.Config
	next := Membership{Voters: []NodeID{n.id}}
	for _, ids := range [][]uint64{old.Voters, old.Learners, old.Removed} {
		for _, id := range ids {
			if NodeID(id) != n.id && !slices.Contains(next.Removed, NodeID(id)) {
				next.Removed = append(next.Removed, NodeID(id))
			}
		}
	}
	slices.Sort(next.Removed)
	n.hs.Term, n.hs.Vote = n.hs.Term+1, None
	e := Entry{Index: n.log.last + 1, Term: n.hs.Term, Data: EncodeMembership(next)}
	n.log.append(e)
	n.noteEntries([]Entry{e})
	n.tr = nil
	if n.fb.rec != nil && n.fb.rec.State != FirstBootConfirmed {
		n.fb.rec.State, n.fb.changed = FirstBootConfirmed, true
	}
	n.alert(AlertFirstBoot, "FORCE NEW CLUSTER: configuration entry %d (term %d) makes this node the only voter; removed %v", e.Index, e.Term, next.Removed)
	return e, nil
}
