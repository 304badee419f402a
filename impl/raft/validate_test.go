package raft

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestValidateBounds: every bound Validate enforces, at its boundary: the
// value at the bound is accepted and the next one (and 2^64-1) refused,
// for an AppendEntries with entries and without where the bound concerns
// it (with entries, an index near 2^64 wraps: PrevLogIndex 2^64-1 plus one
// entry is last index 0, so only the PrevLogIndex bound refuses it; without
// entries the last-index bound refuses it too). Each case names the check
// it alone exercises: dropping any one check of validate.go makes a case
// fail (checked for each of the 46 checks by dropping it; the commit that
// added this test says so).
func TestValidateBounds(t *testing.T) {
	const u64 = math.MaxUint64
	voters := []NodeID{1, 2, 3}
	// ent builds n contiguous entries after prev, all of term.
	ent := func(prev uint64, n int, term uint64) []Entry {
		out := make([]Entry, n)
		for k := range out {
			out[k] = Entry{Index: prev + 1 + uint64(k), Term: term}
		}
		return out
	}
	app := func(term, prev, prevTerm uint64, ents []Entry, commit, leaderCommit uint64) Message {
		return Message{Type: MsgApp, From: 1, To: 2, Term: term, PrevLogIndex: prev, PrevLogTerm: prevTerm,
			Entries: ents, Commit: commit, LeaderCommit: leaderCommit}
	}
	vote := func(typ MessageType, term, lastIndex, lastTerm uint64) Message {
		return Message{Type: typ, From: 1, To: 2, Term: term, LastLogIndex: lastIndex, LastLogTerm: lastTerm}
	}
	resp := func(typ MessageType, term uint64, success bool, match, hint, hintTerm uint64) Message {
		return Message{Type: typ, From: 1, To: 2, Term: term, Success: success, MatchIndex: match, HintIndex: hint, HintTerm: hintTerm}
	}
	big := make([]byte, WireBytesMax+1)
	type tc struct {
		name string
		m    Message
		ok   bool
	}
	cases := []tc{
		// Term (every type).
		{"vote term TermMax", vote(MsgVote, TermMax, 1, 1), true},
		{"vote term TermMax+1", vote(MsgVote, TermMax+1, 1, 1), false},
		{"vote term 2^64-1", vote(MsgVote, u64, 1, 1), false},
		{"vote term 0", vote(MsgVote, 0, 0, 0), false},
		{"app term TermMax, entries of it", app(TermMax, 1, 1, ent(1, 1, TermMax), 0, 0), true},
		{"app term TermMax+1, entries of it", app(TermMax+1, 1, 1, ent(1, 1, TermMax+1), 0, 0), false},
		{"app term 2^64-1, entries of it", app(u64, 1, 1, ent(1, 1, u64), 0, 0), false},
		{"app term TermMax+1, no entries", app(TermMax+1, 1, 1, nil, 0, 0), false},
		{"resp term TermMax+1", resp(MsgAppResp, TermMax+1, true, 1, 0, 0), false},
		{"passive term 2^64-1", resp(MsgAppRespPassive, u64, true, 1, 0, 0), false},
		{"timeout-now term TermMax+1", Message{Type: MsgTimeoutNow, From: 1, To: 2, Term: TermMax + 1}, false},
		// The candidate's tip.
		{"vote last index IndexMax", vote(MsgVote, 3, IndexMax, 3), true},
		{"vote last index IndexMax+1", vote(MsgVote, 3, IndexMax+1, 3), false},
		{"pre-vote last index 2^64-1", vote(MsgPreVote, 3, u64, 3), false},
		{"vote last term = term", vote(MsgVote, 3, 5, 3), true},
		{"vote last term term+1", vote(MsgVote, 3, 5, 4), false},
		{"pre-vote last term term+1", vote(MsgPreVote, 3, 5, 4), false},
		{"vote last term at index 0", vote(MsgVote, 3, 0, 1), false},
		{"vote transfer", Message{Type: MsgVote, From: 1, To: 2, Term: 3, Transfer: true}, true},
		// A repair's tip (repair.go): within its term, as a candidate's.
		{"repair tip of the message's term", vote(MsgRepairResp, 3, 5, 3), true},
		{"repair tip past the message's term", vote(MsgRepairResp, 3, 5, 4), false},
		{"repair request tip of its term", vote(MsgRepair, 3, 5, 3), true},
		{"repair tip IndexMax+1", vote(MsgRepair, 3, IndexMax+1, 3), false},
		{"repair tip term at index 0", vote(MsgRepairResp, 3, 0, 1), false},
		{"pre-vote transfer", Message{Type: MsgPreVote, From: 1, To: 2, Term: 3, Transfer: true}, false},
		// PrevLogIndex.
		{"app prev IndexMax, no entries", app(3, IndexMax, 3, nil, 0, 0), true},
		{"app prev IndexMax+1, no entries", app(3, IndexMax+1, 3, nil, 0, 0), false},
		{"app prev 2^64-1, no entries", app(3, u64, 3, nil, 0, 0), false},
		{"app prev 2^64-1, one entry (last wraps to 0)", app(3, u64, 3, ent(u64, 1, 3), 0, 0), false},
		{"app prev 2^64-2, two entries (last wraps to 0)", app(3, u64-1, 3, ent(u64-1, 2, 3), 0, 0), false},
		// The last index.
		{"app last IndexMax", app(3, IndexMax-1, 3, ent(IndexMax-1, 1, 3), 0, 0), true},
		{"app last IndexMax+1", app(3, IndexMax, 3, ent(IndexMax, 1, 3), 0, 0), false},
		// PrevLogTerm.
		{"app prev term = term, no entries", app(3, 2, 3, nil, 0, 0), true},
		{"app prev term term+1, no entries", app(3, 2, 4, nil, 0, 0), false},
		{"app prev term term+1, entries", app(3, 2, 4, ent(2, 1, 3), 0, 0), false},
		{"app prev term at index 0", app(3, 0, 1, nil, 0, 0), false},
		{"app prev index without its term", app(3, 2, 0, nil, 0, 0), false},
		{"app prev index without its term, entries", app(3, 2, 0, ent(2, 1, 3), 0, 0), false},
		// Entries: count, bytes, indexes, terms.
		{"app WireEntriesMax entries", app(3, 0, 0, ent(0, WireEntriesMax, 3), 0, 0), true},
		{"app WireEntriesMax+1 entries", app(3, 0, 0, ent(0, WireEntriesMax+1, 3), 0, 0), false},
		{"app WireBytesMax bytes", app(3, 0, 0, []Entry{{Index: 1, Term: 3, Data: big[:WireBytesMax]}}, 0, 0), true},
		{"app WireBytesMax+1 bytes", app(3, 0, 0, []Entry{{Index: 1, Term: 3, Data: big}}, 0, 0), false},
		{"app WireBytesMax+1 bytes in two", app(3, 0, 0, []Entry{{Index: 1, Term: 3, Data: big[:1]}, {Index: 2, Term: 3, Data: big[1:]}}, 0, 0), false},
		{"app entry index gap", app(3, 1, 1, []Entry{{Index: 2, Term: 3}, {Index: 4, Term: 3}}, 0, 0), false},
		{"app first entry not after prev", app(3, 1, 1, []Entry{{Index: 3, Term: 3}}, 0, 0), false},
		{"app entry term below prev term", app(3, 1, 2, []Entry{{Index: 2, Term: 1}}, 0, 0), false},
		{"app entry term = prev term", app(3, 1, 2, []Entry{{Index: 2, Term: 2}}, 0, 0), true},
		{"app entry term 0 after index 0", app(3, 0, 0, []Entry{{Index: 1, Term: 0}}, 0, 0), false},
		{"app entry term above term", app(3, 1, 1, []Entry{{Index: 2, Term: 4}}, 0, 0), false},
		{"app entry terms fall", app(3, 1, 1, []Entry{{Index: 2, Term: 3}, {Index: 3, Term: 2}}, 0, 0), false},
		// Commit and LeaderCommit.
		{"app commit = last, entries", app(3, 1, 1, ent(1, 2, 3), 3, 3), true},
		{"app commit last+1, entries", app(3, 1, 1, ent(1, 2, 3), 4, 4), false},
		{"app commit = prev, no entries", app(3, 5, 3, nil, 5, 9), true},
		{"app commit prev+1, no entries", app(3, 5, 3, nil, 6, 9), false},
		{"app commit above leader commit", app(3, 5, 3, nil, 5, 4), false},
		{"app commit above leader commit, entries", app(3, 1, 1, ent(1, 2, 3), 3, 2), false},
		{"app leader commit IndexMax", app(3, 5, 3, nil, 5, IndexMax), true},
		{"app leader commit IndexMax+1", app(3, 5, 3, nil, 5, IndexMax+1), false},
		{"app leader commit 2^64-1, entries", app(3, 1, 1, ent(1, 1, 3), 2, u64), false},
		// AppendEntries responses, both kinds.
		{"resp match IndexMax", resp(MsgAppResp, 3, true, IndexMax, 0, 0), true},
		{"resp match IndexMax+1", resp(MsgAppResp, 3, true, IndexMax+1, 0, 0), false},
		{"passive match 2^64-1", resp(MsgAppRespPassive, 3, true, u64, 0, 0), false},
		{"resp hint IndexMax", resp(MsgAppResp, 3, false, 0, IndexMax, 3), true},
		{"resp hint IndexMax+1", resp(MsgAppResp, 3, false, 0, IndexMax+1, 3), false},
		{"passive hint 2^64-1", resp(MsgAppRespPassive, 3, false, 0, u64, 3), false},
		{"resp hint term = term", resp(MsgAppResp, 3, false, 0, 5, 3), true},
		{"resp hint term term+1", resp(MsgAppResp, 3, false, 0, 5, 4), false},
		{"resp hint term at index 0", resp(MsgAppResp, 3, false, 0, 0, 1), false},
		{"resp success with hint", resp(MsgAppResp, 3, true, 1, 1, 1), false},
		{"resp success with hint term only", resp(MsgAppRespPassive, 3, true, 1, 0, 1), false},
		{"resp rejection with match", resp(MsgAppResp, 3, false, 1, 0, 0), false},
		// Addressing and type.
		{"type 0", Message{Type: 0, From: 1, To: 2, Term: 1}, false},
		{"type end", Message{Type: msgTypeEnd, From: 1, To: 2, Term: 1}, false},
		{"last type", Message{Type: MsgFirstBootResp, From: 1, To: 2, Term: 3, Seq: 9}, true},
		{"to another", Message{Type: MsgTimeoutNow, From: 1, To: 3, Term: 1}, false},
		{"from self", Message{Type: MsgTimeoutNow, From: 2, To: 2, Term: 1}, false},
		{"from none", Message{Type: MsgTimeoutNow, From: None, To: 2, Term: 1}, false},
		{"from a non-voter", Message{Type: MsgTimeoutNow, From: 4, To: 2, Term: 1}, false},
	}
	// Fields a type does not carry: each set alone on every type that does
	// not carry it.
	fields := []struct {
		name    string
		set     func(*Message)
		carried []MessageType
	}{
		{"LastLogIndex", func(m *Message) { m.LastLogIndex = 1 }, []MessageType{MsgVote, MsgPreVote, MsgRepair, MsgRepairResp}},
		{"LastLogTerm", func(m *Message) { m.LastLogTerm = 1 }, []MessageType{MsgVote, MsgPreVote, MsgRepair, MsgRepairResp}},
		{"Transfer", func(m *Message) { m.Transfer = true }, []MessageType{MsgVote}},
		{"Granted", func(m *Message) { m.Granted = true }, []MessageType{MsgVoteResp, MsgPreVoteResp, MsgFirstBootResp}},
		{"PrevLogIndex", func(m *Message) { m.PrevLogIndex = 1 }, []MessageType{MsgApp, MsgSnap, MsgRepair, MsgRepairResp}},
		{"PrevLogTerm", func(m *Message) { m.PrevLogTerm = 1 }, []MessageType{MsgApp, MsgSnap, MsgRepairResp}},
		{"Entries", func(m *Message) { m.Entries = []Entry{{Index: 1, Term: 1}} }, []MessageType{MsgApp, MsgRepairResp}},
		{"Commit", func(m *Message) { m.Commit = 1 }, []MessageType{MsgApp}},
		{"LeaderCommit", func(m *Message) { m.LeaderCommit = 1 }, []MessageType{MsgApp, MsgSnap}},
		{"Success", func(m *Message) { m.Success = true }, []MessageType{MsgAppResp, MsgAppRespPassive}},
		{"MatchIndex", func(m *Message) { m.MatchIndex = 1 }, []MessageType{MsgAppResp, MsgAppRespPassive}},
		{"HintIndex", func(m *Message) { m.HintIndex = 1 }, []MessageType{MsgAppResp, MsgAppRespPassive}},
		{"HintTerm", func(m *Message) { m.HintTerm = 1 }, []MessageType{MsgAppResp, MsgAppRespPassive}},
		{"Round", func(m *Message) { m.Round = 1 }, []MessageType{MsgApp, MsgAppResp, MsgAppRespPassive, MsgFirstBootResp}},
		{"Seq", func(m *Message) { m.Seq = 1 }, []MessageType{MsgApp, MsgAppResp, MsgAppRespPassive, MsgFirstBoot, MsgFirstBootResp}},
	}
	// bare is the smallest valid message of a type: a snapshot has an index.
	bare := func(typ MessageType) Message {
		m := Message{Type: typ, From: 1, To: 2, Term: 3}
		if typ == MsgSnap {
			m.PrevLogIndex, m.PrevLogTerm, m.LeaderCommit = 2, 1, 2
		}
		if typ == MsgFirstBoot || typ == MsgFirstBootResp {
			m.Seq = 9 // the asker's incarnation: never 0
		}
		return m
	}
	cases = append(cases,
		tc{"MsgSnap at index 0", Message{Type: MsgSnap, From: 1, To: 2, Term: 3}, false},
		tc{"MsgSnap term beyond the message's", Message{Type: MsgSnap, From: 1, To: 2, Term: 3, PrevLogIndex: 2, PrevLogTerm: 4, LeaderCommit: 2}, false},
		tc{"MsgSnap commit below the snapshot", Message{Type: MsgSnap, From: 1, To: 2, Term: 3, PrevLogIndex: 2, PrevLogTerm: 1, LeaderCommit: 1}, false},
		tc{"MsgSnap index beyond IndexMax", Message{Type: MsgSnap, From: 1, To: 2, Term: 3, PrevLogIndex: IndexMax + 1, PrevLogTerm: 1, LeaderCommit: IndexMax + 1}, false},
	)
	for typ := MsgVote; typ < msgTypeEnd; typ++ {
		cases = append(cases, tc{fmt.Sprintf("%v bare", typ), bare(typ), true})
		for _, f := range fields {
			if slices.Contains(f.carried, typ) {
				continue
			}
			m := bare(typ)
			f.set(&m)
			cases = append(cases, tc{fmt.Sprintf("%v with %s", typ, f.name), m, false})
		}
	}
	// None is never a sender, even in a voter list that (wrongly) holds it.
	if err := Validate(&Message{Type: MsgTimeoutNow, From: None, To: 2, Term: 1}, 2, []NodeID{None, 1, 2}); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("from none, listed as a voter: accepted (%v)", err)
	}
	for _, c := range cases {
		err := Validate(&c.m, 2, voters)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case !c.ok && !errors.Is(err, ErrInvalidMessage):
			t.Errorf("%s: accepted (%v)", c.name, err)
		}
	}
}
