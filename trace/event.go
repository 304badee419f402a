package trace

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

// Version is the format version written in every event's "v". Version 2
// logs, in a node's post-state, what changed in its log since its previous
// event (LogKeep, LogAppend) instead of the whole log, and may name the
// servers (Config.Names). MinVersion is the oldest version still read:
// version 1 logs the whole log in every event and names servers s1..s9.
const (
	Version    = 2
	MinVersion = 1
)

// Actions are the action names an event may carry: raft.tla's operators
// (with the handlers under Receive named individually), the durable
// profile's additions, and Init for line 0.
var Actions = []string{
	"Init",
	"Restart", "Timeout", "RequestVote", "BecomeLeader", "ClientRequest",
	"AdvanceCommitIndex", "AppendEntries",
	"UpdateTerm", "HandleRequestVoteRequest", "HandleRequestVoteResponse",
	"HandleAppendEntriesRequest", "HandleAppendEntriesResponse", "DropStaleResponse",
	"DuplicateMessage", "DropMessage",
	"Flush", "Crash", "Corrupt",
	// The production actions (spec/production.go), in traces whose Config
	// has "production": true.
	"SendAppendEntries", "HandleAppendEntriesBatch", "HandleAppendEntriesResponseMax",
	"FlushTo", "StepDown", "Persist",
	// Snapshots (spec/snapshot.go): a leader sends the committed prefix of
	// its log, a follower installs it, a restart brings the commit index
	// back as the snapshot's.
	"SendSnapshot", "InstallSnapshot", "CrashFromSnapshot", "CorruptFromSnapshot",
	// An environment action (spec/badcommit.go), in traces whose Config
	// has badCommits: a request's leader commit raised in the bag (msg is
	// the request before, cut the new leader commit).
	"CorruptLeaderCommit",
	// Membership (spec/membership.go), in traces whose Config has
	// "membership": true: a leader appends a configuration entry (value:
	// the entry's value, peer: the server it changes).
	"ChangeConfig",
	// Power losses (spec/power.go), in traces whose Config has
	// powerLosses: a reboot whose recovery found the last batch damaged
	// with nothing vouching for it (verdict AMBIGUOUS; cut: the length of
	// the log kept).
	"PowerLoss",
	// PowerLoss of a member restarting from a snapshot (production): the
	// commit index comes back as the snapshot's, as CrashFromSnapshot.
	"PowerLossFromSnapshot",
	// Repair from peers (spec/repair.go), in traces whose Config has
	// "repair": true: a TRUNCATED member asks a peer (peer: the peer), the
	// peer answers with its durable log, the member takes it (branches
	// conflict and append, in the production profile) and counts it.
	"RequestRepair", "HandleRepairRequest", "HandleRepairResponse",
	// The repair answered with a snapshot (spec/repairsnap.go), production
	// traces with "repair": true: a CLEAN peer answers a request (msg) with
	// its log up to cut, as an InstallSnapshotRequest to the requester,
	// whose InstallSnapshot takes it.
	"SendRepairSnapshot",
}

// Branches of HandleAppendEntriesRequest.
var Branches = []string{"reject", "return-to-follower", "already-done", "conflict", "append", "durable-prefix"}

// Event is one line of a trace.
type Event struct {
	V      int    `json:"v"`
	Seq    int    `json:"seq"`
	Action string `json:"action"`
	// Node is the server that takes the step: i of the action, or m.mdest
	// for the message actions.
	Node string `json:"node,omitempty"`
	// Peer is j: the destination of RequestVote and AppendEntries, the
	// source (m.msource) of a message action.
	Peer string `json:"peer,omitempty"`
	// Msg is the message a message action consumes, copies or drops, or
	// the message SendAppendEntries sends.
	Msg    *Message `json:"msg,omitempty"`
	Branch string   `json:"branch,omitempty"`
	// Value is ClientRequest's v, or ChangeConfig's entry value.
	Value *int `json:"value,omitempty"`
	// Cut is the length of log[node] that Crash or Corrupt keeps,
	// FlushTo's new durableLen, or SendRepairSnapshot's snapshot index.
	Cut *int `json:"cut,omitempty"`
	// State is the node's post-state.
	State *NodeState `json:"state,omitempty"`
	// Config is on the Init event only.
	Config *Config `json:"config,omitempty"`
	// Clock is the node's logical (Lamport) clock at the event, in the
	// per-node traces raftd writes (absent: none): it grows by one at every
	// event of the node, across its restarts, and a receive's is above
	// the clock its message left with. A merge of per-node files orders
	// by it. The checker ignores it.
	Clock uint64 `json:"clock,omitempty"`
}

// Config is the model's constants, on line 0.
type Config struct {
	Profile string `json:"profile"` // "raft" or "durable"
	Servers int    `json:"servers"`
	// Names are the servers' names, one per server, in the order of their
	// spec ids 1..Servers (version 2; absent means s1..sN, which is all
	// version 1 has). Every node, peer, message source or destination,
	// votedFor, vote set and index map key is one of them.
	Names       []string `json:"names,omitempty"`
	Values      int      `json:"values"`
	Crashes     int      `json:"crashes,omitempty"`
	Corruptions int      `json:"corruptions,omitempty"`
	Bugs        string   `json:"bugs,omitempty"`
	// Production: the production actions of spec/production.go are steps
	// of the model (profile durable only). Absent means false.
	Production bool `json:"production,omitempty"`
	// BadCommits: the budget of spec CorruptLeaderCommit (an environment
	// action raising a request's leader commit). Absent means 0.
	BadCommits int `json:"badCommits,omitempty"`
	// PowerLosses: the budget of spec PowerLoss (a reboot after a power
	// cut that tore the unsynced tail or damaged the last synced batch:
	// the AMBIGUOUS verdict). Absent means 0.
	PowerLosses int `json:"powerLosses,omitempty"`
	// Membership: configurations are log entries and ChangeConfig a step
	// (spec/membership.go; docs/membership.md). InitVoters: servers
	// 1..InitVoters are the initial voters (absent or 0: all). Absent
	// means false.
	Membership bool `json:"membership,omitempty"`
	InitVoters int  `json:"initVoters,omitempty"`
	// Repair: a TRUNCATED member repairs itself from its peers
	// (spec/repair.go; docs/repair.md). Absent means false.
	Repair bool `json:"repair,omitempty"`
	// MarkedVotes: every voter that is not CLEAN grants marked votes,
	// which count only towards a unanimous election (spec -marked-votes;
	// docs/durable-raft.md). impl/raft runs the rule unless its
	// truncated-withholds-vote switch is on. Absent means false.
	MarkedVotes bool `json:"markedVotes,omitempty"`
	// Source says who wrote the trace: "spec", "impl", ...
	Source string `json:"source,omitempty"`
}

// Entry is a log entry.
type Entry struct {
	Term  int `json:"term"`
	Value int `json:"value"`
}

// Run is a run of log entries of one term, with one value per entry, in
// order (version 2).
type Run struct {
	Term   int   `json:"term"`
	Values []int `json:"values"`
}

// NodeState is the post-state of one node. Pointers and nil maps mark
// variables the emitter does not log.
//
// The log: version 1 logs it whole (Log; absent means empty). Version 2
// logs what changed since the node's previous event that has a state (or
// since Init): the log is its first LogKeep entries followed by
// LogAppend. LogKeep is required in version 2; an unchanged log of n
// entries is LogKeep n and no LogAppend.
type NodeState struct {
	CurrentTerm int     `json:"currentTerm"`
	State       string  `json:"state"`    // Follower, Candidate, Leader
	VotedFor    string  `json:"votedFor"` // "Nil" or a server
	Log         []Entry `json:"log"`
	LogKeep     *int    `json:"logKeep,omitempty"`
	LogAppend   []Run   `json:"logAppend,omitempty"`
	CommitIndex int     `json:"commitIndex"`

	VotesResponded *[]string      `json:"votesResponded,omitempty"`
	VotesGranted   *[]string      `json:"votesGranted,omitempty"`
	NextIndex      map[string]int `json:"nextIndex,omitempty"`
	MatchIndex     map[string]int `json:"matchIndex,omitempty"`

	DurableLen      *int   `json:"durableLen,omitempty"`
	LearnedCommit   *int   `json:"learnedCommit,omitempty"`
	Verdict         string `json:"verdict,omitempty"` // CLEAN, TRUNCATED or AMBIGUOUS
	TruncatedAtTerm *int   `json:"truncatedAtTerm,omitempty"`
}

// nodeStateWire is NodeState's JSON form when written: a version 1 state
// (LogKeep nil) always has its log, empty or not; a version 2 state never.
type nodeStateWire struct {
	CurrentTerm     int            `json:"currentTerm"`
	State           string         `json:"state"`
	VotedFor        string         `json:"votedFor"`
	Log             *[]Entry       `json:"log,omitempty"`
	LogKeep         *int           `json:"logKeep,omitempty"`
	LogAppend       []Run          `json:"logAppend,omitempty"`
	CommitIndex     int            `json:"commitIndex"`
	VotesResponded  *[]string      `json:"votesResponded,omitempty"`
	VotesGranted    *[]string      `json:"votesGranted,omitempty"`
	NextIndex       map[string]int `json:"nextIndex,omitempty"`
	MatchIndex      map[string]int `json:"matchIndex,omitempty"`
	DurableLen      *int           `json:"durableLen,omitempty"`
	LearnedCommit   *int           `json:"learnedCommit,omitempty"`
	Verdict         string         `json:"verdict,omitempty"`
	TruncatedAtTerm *int           `json:"truncatedAtTerm,omitempty"`
}

// MarshalJSON writes the state in the shape of its version.
func (n NodeState) MarshalJSON() ([]byte, error) {
	w := nodeStateWire{CurrentTerm: n.CurrentTerm, State: n.State, VotedFor: n.VotedFor,
		LogKeep: n.LogKeep, LogAppend: n.LogAppend, CommitIndex: n.CommitIndex,
		VotesResponded: n.VotesResponded, VotesGranted: n.VotesGranted, NextIndex: n.NextIndex, MatchIndex: n.MatchIndex,
		DurableLen: n.DurableLen, LearnedCommit: n.LearnedCommit, Verdict: n.Verdict, TruncatedAtTerm: n.TruncatedAtTerm}
	if n.LogKeep == nil {
		log := n.Log
		if log == nil {
			log = []Entry{}
		}
		w.Log = &log
	}
	return json.Marshal(w)
}

// Message is a raft.tla message without its history field mlog. Which
// fields are present depends on Mtype, exactly as in raft.tla's records;
// MleaderCommit is present on AppendEntriesRequest in profile durable only.
// InstallSnapshotRequest (the production actions' snapshot) carries Mterm,
// Mprefix (the runs of the leader's log up to the snapshot's last entry)
// and MleaderCommit. RepairRequest carries Mterm only, RepairResponse Mterm
// and Mprefix (the runs of the peer's durable log; spec/repair.go), or, in
// an impl trace, only that log's tip, MlastLogTerm and MlastLogIndex >= 1
// (the requester is not told the rest; the checker finds the answer in the
// bag by its tip).
type Message struct {
	Mtype         string
	Mterm         int
	MlastLogTerm  int
	MlastLogIndex int
	MprevLogIndex int
	MprevLogTerm  int
	Mentries      []Entry
	McommitIndex  int
	MleaderCommit *int
	MvoteGranted  bool
	Msuccess      bool
	MmatchIndex   int
	Mprefix       []Run
	Msource       string
	Mdest         string
	// Mambiguous: a RequestVoteResponse's grant from an AMBIGUOUS voter
	// (spec/power.go); written only when true.
	Mambiguous bool
}

// wireMessage is the JSON shape: every field optional, checked by mtype.
type wireMessage struct {
	Mtype         string   `json:"mtype"`
	Mterm         *int     `json:"mterm,omitempty"`
	MlastLogTerm  *int     `json:"mlastLogTerm,omitempty"`
	MlastLogIndex *int     `json:"mlastLogIndex,omitempty"`
	MprevLogIndex *int     `json:"mprevLogIndex,omitempty"`
	MprevLogTerm  *int     `json:"mprevLogTerm,omitempty"`
	Mentries      *[]Entry `json:"mentries,omitempty"`
	McommitIndex  *int     `json:"mcommitIndex,omitempty"`
	MleaderCommit *int     `json:"mleaderCommit,omitempty"`
	MvoteGranted  *bool    `json:"mvoteGranted,omitempty"`
	Msuccess      *bool    `json:"msuccess,omitempty"`
	MmatchIndex   *int     `json:"mmatchIndex,omitempty"`
	Mprefix       *[]Run   `json:"mprefix,omitempty"`
	Msource       string   `json:"msource"`
	Mdest         string   `json:"mdest"`
	Mambiguous    *bool    `json:"mambiguous,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// MarshalJSON writes the fields raft.tla's record of this mtype has.
func (m Message) MarshalJSON() ([]byte, error) {
	w := wireMessage{Mtype: m.Mtype, Mterm: ptr(m.Mterm), Msource: m.Msource, Mdest: m.Mdest}
	switch m.Mtype {
	case "RequestVoteRequest":
		w.MlastLogTerm, w.MlastLogIndex = ptr(m.MlastLogTerm), ptr(m.MlastLogIndex)
	case "RequestVoteResponse":
		w.MvoteGranted = ptr(m.MvoteGranted)
		if m.Mambiguous {
			w.Mambiguous = ptr(true)
		}
	case "AppendEntriesRequest":
		entries := m.Mentries
		if entries == nil {
			entries = []Entry{}
		}
		w.MprevLogIndex, w.MprevLogTerm = ptr(m.MprevLogIndex), ptr(m.MprevLogTerm)
		w.Mentries, w.McommitIndex = &entries, ptr(m.McommitIndex)
		w.MleaderCommit = m.MleaderCommit
	case "AppendEntriesResponse":
		w.Msuccess, w.MmatchIndex = ptr(m.Msuccess), ptr(m.MmatchIndex)
	case "InstallSnapshotRequest":
		prefix := m.Mprefix
		if prefix == nil {
			prefix = []Run{}
		}
		w.Mprefix, w.MleaderCommit = &prefix, m.MleaderCommit
		if w.MleaderCommit == nil {
			return nil, fmt.Errorf("trace: InstallSnapshotRequest without mleaderCommit")
		}
	case "RepairRequest":
	case "RepairResponse":
		// The answer's log (spec), or only its tip (impl: the requester
		// knows no more of the peer's durable log).
		if m.Mprefix != nil || m.MlastLogIndex == 0 {
			prefix := m.Mprefix
			if prefix == nil {
				prefix = []Run{}
			}
			w.Mprefix = &prefix
		} else {
			w.MlastLogTerm, w.MlastLogIndex = ptr(m.MlastLogTerm), ptr(m.MlastLogIndex)
		}
	default:
		return nil, fmt.Errorf("trace: unknown mtype %q", m.Mtype)
	}
	return json.Marshal(w)
}

// UnmarshalJSON accepts exactly the fields of the message's mtype.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w wireMessage
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	if w.Mterm == nil {
		return fmt.Errorf("trace: message without mterm")
	}
	*m = Message{Mtype: w.Mtype, Mterm: *w.Mterm, Msource: w.Msource, Mdest: w.Mdest}
	type field struct {
		name    string
		present bool
	}
	var want, have []field
	all := []field{
		{"mlastLogTerm", w.MlastLogTerm != nil}, {"mlastLogIndex", w.MlastLogIndex != nil},
		{"mprevLogIndex", w.MprevLogIndex != nil}, {"mprevLogTerm", w.MprevLogTerm != nil},
		{"mentries", w.Mentries != nil}, {"mcommitIndex", w.McommitIndex != nil},
		{"mvoteGranted", w.MvoteGranted != nil}, {"msuccess", w.Msuccess != nil},
		{"mmatchIndex", w.MmatchIndex != nil},
	}
	switch w.Mtype {
	case "RequestVoteRequest":
		want = all[0:2]
	case "RequestVoteResponse":
		want = all[6:7]
	case "AppendEntriesRequest":
		want = all[2:6]
	case "AppendEntriesResponse":
		want = all[7:9]
	case "InstallSnapshotRequest":
		if w.Mprefix == nil || w.MleaderCommit == nil {
			return fmt.Errorf("trace: InstallSnapshotRequest without mprefix or mleaderCommit")
		}
	case "RepairRequest":
	case "RepairResponse":
		// The log (mprefix) or its tip (mlastLogTerm, mlastLogIndex > 0).
		switch {
		case w.Mprefix == nil && (w.MlastLogIndex == nil || *w.MlastLogIndex < 1):
			return fmt.Errorf("trace: RepairResponse without mprefix or mlastLogIndex")
		case w.Mprefix != nil && (w.MlastLogTerm != nil || w.MlastLogIndex != nil):
			return fmt.Errorf("trace: RepairResponse with both mprefix and a tip")
		case w.Mprefix == nil:
			want = all[0:2]
		}
	default:
		return fmt.Errorf("trace: unknown mtype %q", w.Mtype)
	}
	for _, f := range all {
		if f.present {
			have = append(have, f)
		}
	}
	if len(have) != len(want) {
		return fmt.Errorf("trace: %s carries fields %v, want %v", w.Mtype, have, want)
	}
	for k := range want {
		if !want[k].present {
			return fmt.Errorf("trace: %s without %s", w.Mtype, want[k].name)
		}
	}
	if w.MleaderCommit != nil && w.Mtype != "AppendEntriesRequest" && w.Mtype != "InstallSnapshotRequest" {
		return fmt.Errorf("trace: %s carries mleaderCommit", w.Mtype)
	}
	if w.Mambiguous != nil && w.Mtype != "RequestVoteResponse" {
		return fmt.Errorf("trace: %s carries mambiguous", w.Mtype)
	}
	m.Mambiguous = w.Mambiguous != nil && *w.Mambiguous
	if w.Mprefix != nil && w.Mtype != "InstallSnapshotRequest" && w.Mtype != "RepairResponse" {
		return fmt.Errorf("trace: %s carries mprefix", w.Mtype)
	}
	if w.Mprefix != nil {
		m.Mprefix = *w.Mprefix
	}
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	m.MlastLogTerm, m.MlastLogIndex = deref(w.MlastLogTerm), deref(w.MlastLogIndex)
	m.MprevLogIndex, m.MprevLogTerm = deref(w.MprevLogIndex), deref(w.MprevLogTerm)
	m.McommitIndex, m.MmatchIndex = deref(w.McommitIndex), deref(w.MmatchIndex)
	m.MleaderCommit = w.MleaderCommit
	if w.Mentries != nil {
		m.Mentries = *w.Mentries
	}
	m.MvoteGranted = w.MvoteGranted != nil && *w.MvoteGranted
	m.Msuccess = w.Msuccess != nil && *w.Msuccess
	return nil
}

var (
	serverV1 = regexp.MustCompile(`^s[1-9]$`)
	name     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,62}$`)
)

// ValidServer reports whether name is a version 1 server name: s1..s9.
func ValidServer(name string) bool { return serverV1.MatchString(name) }

// ValidName reports whether name may name a server in version 2: 1 to 63
// letters, digits and _ . : @ -, starting with a letter or digit, and not
// "Nil" (votedFor's no-vote).
func ValidName(n string) bool { return n != "Nil" && name.MatchString(n) }

// DefaultNames is s1..sN, the names of a config without Names.
func DefaultNames(n int) []string {
	out := make([]string, n)
	for k := range out {
		out[k] = "s" + strconv.Itoa(k+1)
	}
	return out
}

// ServerNames is the config's names: Names, or s1..sN.
func (c *Config) ServerNames() []string {
	if c.Names != nil {
		return c.Names
	}
	return DefaultNames(c.Servers)
}
