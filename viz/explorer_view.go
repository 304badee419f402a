package viz

import (
	"fmt"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

// StateView is GET /api/state: one state with every variable of the
// model, what each invariant says of it, and its successors.
type StateView struct {
	Path        []int           `json:"path"`
	Fingerprint string          `json:"fingerprint"`
	InBounds    bool            `json:"inBounds"`
	Steps       []string        `json:"steps"` // the labels along the path
	Servers     []ServerView    `json:"servers"`
	Messages    []BagView       `json:"messages"`
	Elections   []ElectionView  `json:"elections"`
	AllLogs     [][]trace.Entry `json:"allLogs"`
	Committed   []CommitView    `json:"committed"`
	Budgets     *BudgetView     `json:"budgets,omitempty"`
	Invariants  []InvariantView `json:"invariants"`
	Successors  []SuccessorView `json:"successors"`
}

// ServerView is one server's variables: the trace's node state (every
// per-server variable but the history variable voterLog) and the rest.
type ServerView struct {
	Name     string           `json:"name"`
	Vars     *trace.NodeState `json:"vars"`
	VoterLog string           `json:"voterLog,omitempty"`
	StaleLog []trace.Entry    `json:"staleLog,omitempty"` // -bug truncation-not-synced
}

// BagView is one message of the bag, with its count and its history
// field mlog.
type BagView struct {
	Msg   *trace.Message `json:"msg"`
	Mlog  []trace.Entry  `json:"mlog"`
	Count int            `json:"count"`
	Text  string         `json:"text"`
}

// ElectionView is a record of elections.
type ElectionView struct {
	Term     int           `json:"term"`
	Leader   string        `json:"leader"`
	Log      []trace.Entry `json:"log"`
	Votes    []string      `json:"votes"`
	VoterLog string        `json:"voterLog"`
}

// CommitView is a record of committed.
type CommitView struct {
	Index      int `json:"index"`
	Term       int `json:"term"`
	CommitTerm int `json:"commitTerm"`
}

// BudgetView is the durable profile's budgets left.
type BudgetView struct {
	CrashesLeft     int `json:"crashesLeft"`
	CorruptionsLeft int `json:"corruptionsLeft"`
}

// InvariantView is what one invariant says of a state.
type InvariantView struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// SuccessorView is one successor: its index (the next path element), the
// step, whether it is in the bounds, and which invariants it breaks.
type SuccessorView struct {
	Index    int      `json:"index"`
	Label    string   `json:"label"`
	Action   string   `json:"action"`
	Node     string   `json:"node"`
	Peer     string   `json:"peer,omitempty"`
	InBounds bool     `json:"inBounds"`
	Violates []string `json:"violates,omitempty"`
	New      string   `json:"fingerprint"`
}

func entries(l spec.Log) []trace.Entry {
	out := []trace.Entry{}
	for _, e := range l.Entries() {
		out = append(out, trace.Entry{Term: int(e.Term), Value: int(e.Value)})
	}
	return out
}

func (x *Explorer) view(path []int, steps []spec.Step) *StateView {
	m := x.m
	s := steps[len(steps)-1].State
	if path == nil {
		path = []int{}
	}
	v := &StateView{Path: path, InBounds: m.InBounds(s), Fingerprint: fmt.Sprintf("%016x", spec.Fingerprint(m.Encode(nil, s))),
		Steps: []string{}, Messages: []BagView{}, Elections: []ElectionView{}, AllLogs: [][]trace.Entry{}, Committed: []CommitView{}}
	for _, st := range steps[1:] {
		v.Steps = append(v.Steps, st.Label.String())
	}
	for _, i := range m.Servers() {
		sv := ServerView{Name: i.String(), Vars: m.NodeState(s, i), VoterLog: s.VoterLog[i].String()}
		if s.StaleLog[i].Len() > 0 {
			sv.StaleLog = entries(s.StaleLog[i])
		}
		v.Servers = append(v.Servers, sv)
	}
	for _, b := range s.Messages {
		v.Messages = append(v.Messages, BagView{Msg: m.TraceMessage(b.M), Mlog: entries(b.M.Mlog), Count: int(b.N), Text: b.M.String()})
	}
	for _, e := range s.Elections {
		ev := ElectionView{Term: int(e.Eterm), Leader: e.Eleader.String(), Log: entries(e.Elog), Votes: []string{}, VoterLog: e.EvoterLog.String()}
		for _, j := range e.Evotes.Members() {
			ev.Votes = append(ev.Votes, j.String())
		}
		v.Elections = append(v.Elections, ev)
	}
	for _, l := range s.AllLogs {
		v.AllLogs = append(v.AllLogs, entries(l))
	}
	for _, c := range s.Committed {
		v.Committed = append(v.Committed, CommitView{Index: int(c.Index), Term: int(c.Term), CommitTerm: int(c.CommitTerm)})
	}
	if m.Profile == spec.ProfileDurable {
		v.Budgets = &BudgetView{CrashesLeft: int(s.CrashesLeft), CorruptionsLeft: int(s.CorruptionsLeft)}
	}
	invs, _ := m.InvariantsFor("")
	for _, inv := range invs {
		d := inv.Check(m, s)
		v.Invariants = append(v.Invariants, InvariantView{Name: inv.Name, OK: d == "", Detail: d})
	}
	k := 0
	var buf []byte
	m.Next(s, func(n spec.State, l spec.Label) {
		sv := SuccessorView{Index: k, Label: l.String(), Action: l.Action.String(), Node: l.I.String(), InBounds: m.InBounds(&n)}
		if l.J != spec.Nil {
			sv.Peer = l.J.String()
		}
		for _, inv := range invs {
			if inv.Check(m, &n) != "" {
				sv.Violates = append(sv.Violates, inv.Name)
			}
		}
		buf = m.Encode(buf[:0], &n)
		sv.New = fmt.Sprintf("%016x", spec.Fingerprint(buf))
		v.Successors = append(v.Successors, sv)
		k++
	})
	if v.Successors == nil {
		v.Successors = []SuccessorView{}
	}
	return v
}
