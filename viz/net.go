package viz

import (
	"slices"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/trace"
)

// This file follows the network: what each step sends, and which send a
// received message came from. A trace logs the message a step handles but
// not the ones it sends; those are what the spec's action puts in the bag,
// rebuilt here from the step and the node's post-state. As in the trace
// checker, a received message is the bag's message with the same content
// (a trace has no mlog), and equal copies are one message with a count.

// receives reports whether the action handles a message of the bag.
func receives(action string) bool {
	switch action {
	case "UpdateTerm", "HandleRequestVoteRequest", "HandleRequestVoteResponse",
		"HandleAppendEntriesRequest", "HandleAppendEntriesResponse", "DropStaleResponse",
		"DuplicateMessage", "DropMessage", "HandleAppendEntriesBatch", "HandleAppendEntriesResponseMax":
		return true
	}
	return false
}

// handling is what the action does with the message it handles.
func handling(e *trace.Event) string {
	switch e.Action {
	case "DropMessage":
		return "x"
	case "DuplicateMessage":
		return "d"
	case "UpdateTerm":
		return "h"
	case "HandleAppendEntriesRequest", "HandleAppendEntriesBatch":
		if e.Branch == "reject" || e.Branch == "already-done" || e.Branch == "durable-prefix" {
			return "c"
		}
		return "h" // return-to-follower, conflict, append: the message stays
	}
	return "c"
}

func typeIndex(mtype string) int { return slices.Index(msgTypes, mtype) }

// msgOf converts a trace message.
func (b *builder) msgOf(t *trace.Message) Msg {
	return Msg{Type: typeIndex(t.Mtype), Term: t.Mterm, From: b.node(t.Msource), To: b.node(t.Mdest),
		LastLogTerm: t.MlastLogTerm, LastLogIndex: t.MlastLogIndex,
		PrevLogIndex: t.MprevLogIndex, PrevLogTerm: t.MprevLogTerm, Entries: entryRuns(t.Mentries),
		Commit: t.McommitIndex, LeaderCommit: t.MleaderCommit,
		Granted: t.MvoteGranted, Success: t.Msuccess, MatchIndex: t.MmatchIndex, End: -1}
}

// key is the message's content: every field raft.tla's record has but mlog.
func (m *Msg) key() string {
	var sb strings.Builder
	for _, x := range []int{m.Type, m.Term, m.From, m.To, m.LastLogTerm, m.LastLogIndex, m.PrevLogIndex,
		m.PrevLogTerm, m.Commit, m.MatchIndex} {
		sb.WriteString(strconv.Itoa(x))
		sb.WriteByte(',')
	}
	if m.LeaderCommit != nil {
		sb.WriteString("lc" + strconv.Itoa(*m.LeaderCommit))
	}
	if m.Granted {
		sb.WriteString("g")
	}
	if m.Success {
		sb.WriteString("s")
	}
	for _, r := range m.Entries {
		sb.WriteByte('[')
		for _, x := range r {
			sb.WriteString(strconv.Itoa(x))
			sb.WriteByte(' ')
		}
	}
	return sb.String()
}

func (m *Msg) envelope() envelope { return envelope{m.Type, m.Term, m.From, m.To} }

// enter puts message id in the bag.
func (b *builder) enter(id int) {
	m := &b.page.Msgs[id]
	b.bag[m.key()] = append(b.bag[m.key()], id)
	b.env[m.envelope()] = append(b.env[m.envelope()], id)
}

// leave takes message id out of the bag.
func (b *builder) leave(id int) {
	m := &b.page.Msgs[id]
	k := m.key()
	b.bag[k] = remove(b.bag[k], id)
	if len(b.bag[k]) == 0 {
		delete(b.bag, k)
	}
	env := m.envelope()
	b.env[env] = remove(b.env[env], id)
	if len(b.env[env]) == 0 {
		delete(b.env, env)
	}
}

func remove(ids []int, id int) []int {
	if k := slices.Index(ids, id); k >= 0 {
		return slices.Delete(ids, k, k+1)
	}
	return ids
}

// find returns the bag's copy of a received message: the oldest with its
// content, else the oldest with its envelope (then approx), else -1.
func (b *builder) find(m *Msg) (int, bool) {
	if ids := b.bag[m.key()]; len(ids) > 0 {
		return ids[0], false
	}
	if ids := b.env[m.envelope()]; len(ids) > 0 {
		return ids[0], true
	}
	return -1, false
}

// readiness says whether the event's message, if it handles one, is in
// the bag: 2 with its content (or it handles none), 1 only with its
// envelope, 0 not at all. A merge takes the readiest events first.
func (b *builder) readiness(e *trace.Event) int {
	if e.Msg == nil || !receives(e.Action) {
		return 2
	}
	m := b.msgOf(e.Msg)
	switch id, approx := b.find(&m); {
	case id < 0:
		return 0
	case approx:
		return 1
	}
	return 2
}

// receive links the event to the message it handles.
func (b *builder) receive(ev *Event, e *trace.Event, idx int) {
	got := b.msgOf(e.Msg)
	id, approx := b.find(&got)
	switch {
	case id < 0: // no event of the run sent it
		b.page.Stats.Unmatched++
		got.Send = -1
		id = len(b.page.Msgs)
		b.page.Msgs = append(b.page.Msgs, got)
		b.enter(id)
	case approx: // the received content is the truth
		b.page.Stats.Approx++
		b.leave(id)
		m := &b.page.Msgs[id]
		was := *m
		if m.Was != nil {
			was = *m.Was
		}
		was.Handled, was.Was, was.Send, was.End, was.Orig, was.DupAt, was.Approx = nil, nil, 0, 0, 0, 0, false
		got.Send, got.Orig, got.DupAt, got.Handled, got.Approx, got.Was = m.Send, m.Orig, m.DupAt, m.Handled, true, &was
		*m = got
		b.enter(id)
	default:
		b.page.Stats.Exact++
	}
	ev.In, ev.InKind = id+1, handling(e)
	m := &b.page.Msgs[id]
	m.Handled = append(m.Handled, idx)
	switch ev.InKind {
	case "c", "x":
		b.leave(id)
		m.End, m.Dropped = idx, ev.InKind == "x"
		if m.Dropped {
			b.page.Stats.Drops++
		}
	case "d":
		b.page.Stats.Dups++
		cp := *m
		cp.Handled, cp.Orig, cp.DupAt, cp.End = nil, id+1, idx+1, -1
		b.page.Msgs = append(b.page.Msgs, cp)
		b.enter(len(b.page.Msgs) - 1)
	}
}

// sends rebuilds the messages the step puts in the bag (spec/'s actions:
// RequestVote, AppendEntries, SendAppendEntries, and the replies of the
// request handlers). pre is the node's state before the step.
func (b *builder) sends(ev *Event, e *trace.Event, pre *State) []Msg {
	st := ev.State
	switch e.Action {
	case "SendAppendEntries":
		if e.Msg == nil {
			return nil
		}
		return []Msg{b.msgOf(e.Msg)}
	case "RequestVote":
		if st == nil {
			return nil
		}
		return []Msg{b.requestVote(ev, st)}
	case "AppendEntries":
		if st == nil {
			return nil
		}
		return []Msg{b.appendEntries(ev, st)}
	case "HandleRequestVoteRequest":
		if st == nil || e.Msg == nil {
			return nil
		}
		// Granted when the vote goes to the candidate in the request's
		// term (a repeated grant to a candidate voted for already, with a
		// log that no longer qualifies, is told apart by the envelope
		// match).
		granted := st.VotedFor == ev.Peer && e.Msg.Mterm == st.Term
		return []Msg{{Type: 1, Term: st.Term, From: ev.Node, To: ev.Peer, Granted: granted}}
	case "HandleAppendEntriesRequest", "HandleAppendEntriesBatch":
		if st == nil || e.Msg == nil {
			return nil
		}
		switch e.Branch {
		case "reject":
			return []Msg{{Type: 3, Term: st.Term, From: ev.Node, To: ev.Peer}}
		case "already-done":
			return []Msg{{Type: 3, Term: st.Term, From: ev.Node, To: ev.Peer, Success: true,
				MatchIndex: e.Msg.MprevLogIndex + len(e.Msg.Mentries)}}
		case "durable-prefix": // a heartbeat answered with the durable index
			if st.Durable == nil {
				return nil
			}
			return []Msg{{Type: 3, Term: st.Term, From: ev.Node, To: ev.Peer, Success: true, MatchIndex: *st.Durable}}
		}
	}
	return nil
}

// requestVote is RequestVote(i, j)'s message: the candidate's durable tip
// in profile durable (rule 4; the bug switches advertise more), its whole
// log in profile raft.
func (b *builder) requestVote(ev *Event, st *State) Msg {
	log := b.logs[ev.Node]
	index := len(log)
	if b.durable && !b.advertiseAppended && st.Durable != nil {
		index = min(*st.Durable, len(log))
	}
	term := 0
	if index > 0 {
		term = log[index-1].Term
	}
	if b.durable && b.advertiseLearned && !b.advertiseAppended && st.Learned != nil {
		index = max(index, *st.Learned)
	}
	return Msg{Type: 0, Term: st.Term, From: ev.Node, To: ev.Peer, LastLogTerm: term, LastLogIndex: index}
}

// appendEntries is raft.tla's AppendEntries(i, j)'s message: at most one
// entry from nextIndex[i][j]. Without a logged nextIndex only its envelope
// is known.
func (b *builder) appendEntries(ev *Event, st *State) Msg {
	m := Msg{Type: 2, Term: st.Term, From: ev.Node, To: ev.Peer}
	if st.NextIndex == nil || ev.Peer < 1 {
		return m
	}
	log := b.logs[ev.Node]
	next := st.NextIndex[ev.Peer-1]
	prev := next - 1
	if prev < 0 || prev > len(log) {
		return m
	}
	m.PrevLogIndex = prev
	if prev > 0 {
		m.PrevLogTerm = log[prev-1].Term
	}
	last := min(len(log), next)
	if next <= last {
		m.Entries = entryRuns(log[next-1 : last])
	}
	m.Commit = min(st.Commit, last)
	if b.durable {
		c := st.Commit
		m.LeaderCommit = &c
	}
	return m
}
