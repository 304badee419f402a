package spec

import (
	"cmp"
	"fmt"
	"strings"
)

// MaxServers bounds the Server constant. Per-server variables are arrays
// indexed by ServerID, so index 0 (Nil) is never used and always zero.
const MaxServers = 5

// ServerID names a member of Server, 1..N. Nil (0) is raft.tla's reserved
// value for "no vote".
type ServerID uint8

// Nil is raft.tla's Nil: votedFor when the server has not voted this term.
const Nil ServerID = 0

func (id ServerID) String() string {
	if id == Nil {
		return "Nil"
	}
	return fmt.Sprintf("s%d", id)
}

// Role is the value of state[i]: Follower, Candidate or Leader.
type Role uint8

// The server states of raft.tla.
const (
	Follower Role = iota
	Candidate
	Leader
)

func (r Role) String() string {
	switch r {
	case Follower:
		return "Follower"
	case Candidate:
		return "Candidate"
	case Leader:
		return "Leader"
	}
	return fmt.Sprintf("Role(%d)", r)
}

// MType is a message's mtype.
type MType uint8

// The message types of raft.tla.
const (
	RequestVoteRequest MType = iota + 1
	RequestVoteResponse
	AppendEntriesRequest
	AppendEntriesResponse
	// InstallSnapshotRequest is the production actions' snapshot
	// (snapshot.go): Mentries holds the prefix of the leader's log.
	InstallSnapshotRequest
	// RepairRequest and RepairResponse (repair.go, with Config.Repair
	// only): a TRUNCATED member asks a peer for its durable log; the
	// answer carries it in Mentries, with the peer's term.
	RepairRequest
	RepairResponse
)

func (t MType) String() string {
	switch t {
	case RequestVoteRequest:
		return "RequestVoteRequest"
	case RequestVoteResponse:
		return "RequestVoteResponse"
	case AppendEntriesRequest:
		return "AppendEntriesRequest"
	case AppendEntriesResponse:
		return "AppendEntriesResponse"
	case InstallSnapshotRequest:
		return "InstallSnapshotRequest"
	case RepairRequest:
		return "RepairRequest"
	case RepairResponse:
		return "RepairResponse"
	}
	return fmt.Sprintf("MType(%d)", t)
}

// Verdict is the recovery verdict a durable-profile server booted with, as
// kept by the server until it is repaired. It is durable: a crash does not
// reset it (see docs/durable-raft.md, "Corrupt").
type Verdict uint8

// Recovery verdicts. Ambiguous (issue 10 item 2, power.go): the boot found
// the last batch of the log damaged with nothing behind it that vouches for
// it, which is either a write torn before its fdatasync (nothing durable
// lost) or a synced, possibly acknowledged batch damaged at rest; the member
// cannot tell which.
const (
	Clean Verdict = iota
	Truncated
	Ambiguous
)

func (v Verdict) String() string {
	switch v {
	case Truncated:
		return "TRUNCATED"
	case Ambiguous:
		return "AMBIGUOUS"
	}
	return "CLEAN"
}

// Int is the type of the terms, indexes, lengths and counts of a state:
// uint8 for the explorer, whose bounds keep every one of them below 256 and
// whose states must stay small (docs/explorer.md, "State and encoding"),
// uint64 for the trace checker, which replays runs of any length.
type Int interface{ ~uint8 | ~uint64 }

// Seq is what the actions need of a log representation L whose terms have
// type T: a TLA+ sequence of entries, immutable (every operation returns a
// new value and leaves its receiver as it was), 1-based. [Log] is the
// explorer's; [RunLog] is the trace checker's. Equal and Compare are on
// contents, never on identity.
type Seq[T Int, L any] interface {
	Len() int
	Term(index int) T
	At(index int) EntryOf[T]
	LastTerm() T
	Append(e EntryOf[T]) L
	Prefix(n int) L
	SubSeq(lo, hi int) L
	Concat(suffix L) L
	Equal(o L) bool
	Compare(o L) int
}

// Voters is what the actions need of the representation V of voterLog[i]
// (a history variable) over logs L.
type Voters[L, V any] interface {
	With(j ServerID, log L) V
	Compare(o V) int
}

// EntryOf is a log entry: [term |-> t, value |-> v]. Values are 1..Values.
type EntryOf[T Int] struct {
	Term  T
	Value uint8
}

// Entry is the explorer's log entry.
type Entry = EntryOf[uint8]

// Log is an immutable TLA+ sequence of entries, stored two bytes per entry
// (term, value) so that logs compare structurally with == and share memory
// freely. Indexes are 1-based as in TLA+.
type Log string

// Len is Len(log).
func (l Log) Len() int { return len(l) / 2 }

// At is log[index] for 1 <= index <= Len(log).
func (l Log) At(index int) Entry {
	return Entry{Term: l[2*index-2], Value: l[2*index-1]}
}

// Term is log[index].term.
func (l Log) Term(index int) uint8 { return l[2*index-2] }

// LastTerm is raft.tla's LastTerm(xlog): the term of the last entry, or 0.
func (l Log) LastTerm() uint8 {
	if len(l) == 0 {
		return 0
	}
	return l[len(l)-2]
}

// Append is Append(log, e).
func (l Log) Append(e Entry) Log { return l + Log([]byte{e.Term, e.Value}) }

// SubSeq is SubSeq(log, lo, hi); empty when hi < lo.
func (l Log) SubSeq(lo, hi int) Log {
	if hi < lo {
		return ""
	}
	return l[2*lo-2 : 2*hi]
}

// Prefix is SubSeq(log, 1, n).
func (l Log) Prefix(n int) Log { return l[:2*n] }

// Entries returns the entries of the log in order.
func (l Log) Entries() []Entry {
	out := make([]Entry, l.Len())
	for i := range out {
		out[i] = l.At(i + 1)
	}
	return out
}

// LogOf builds a Log from entries.
func LogOf(entries ...Entry) Log {
	b := make([]byte, 0, 2*len(entries))
	for _, e := range entries {
		b = append(b, e.Term, e.Value)
	}
	return Log(b)
}

func (l Log) String() string {
	var b strings.Builder
	b.WriteString("<<")
	for i := 1; i <= l.Len(); i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		e := l.At(i)
		if IsConfigValue(e.Value) {
			// Only with membership can a log hold such a value.
			fmt.Fprintf(&b, "[term |-> %d, value |-> %d (config %v)]", e.Term, e.Value, DecodeConfig(e.Value))
			continue
		}
		fmt.Fprintf(&b, "[term |-> %d, value |-> v%d]", e.Term, e.Value)
	}
	b.WriteString(">>")
	return b.String()
}

// ServerSet is a set of servers, bit id-1 for server id.
type ServerSet uint8

// Has reports id \in s.
func (s ServerSet) Has(id ServerID) bool { return s&(1<<(id-1)) != 0 }

// With is s \cup {id}.
func (s ServerSet) With(id ServerID) ServerSet { return s | 1<<(id-1) }

// Len is Cardinality(s).
func (s ServerSet) Len() int {
	n := 0
	for ; s != 0; s &= s - 1 {
		n++
	}
	return n
}

// Members lists the servers of s in increasing order.
func (s ServerSet) Members() []ServerID {
	var out []ServerID
	for id := ServerID(1); id <= MaxServers; id++ {
		if s.Has(id) {
			out = append(out, id)
		}
	}
	return out
}

// VoterLog is one candidate's voterLog[i]: a function from the servers that
// voted for it to the log each voted with. It is kept as an immutable string
// so that states stay small and compare with ==: for each voter in
// increasing order, one byte of server id, one byte of length in entries,
// then the log's bytes.
type VoterLog string

// Dom is DOMAIN voterLog[i].
func (v VoterLog) Dom() ServerSet {
	var dom ServerSet
	for k := 0; k < len(v); k += 2 + 2*int(v[k+1]) {
		dom = dom.With(ServerID(v[k]))
	}
	return dom
}

// Get is voterLog[i][j].
func (v VoterLog) Get(j ServerID) (Log, bool) {
	for k := 0; k < len(v); k += 2 + 2*int(v[k+1]) {
		if ServerID(v[k]) == j {
			return Log(v[k+2 : k+2+2*int(v[k+1])]), true
		}
	}
	return "", false
}

// With is voterLog[i] @@ (j :> log): the existing value wins when j is
// already in the domain.
func (v VoterLog) With(j ServerID, log Log) VoterLog {
	k := 0
	for ; k < len(v); k += 2 + 2*int(v[k+1]) {
		switch id := ServerID(v[k]); {
		case id == j:
			return v
		case id > j:
			return v[:k] + VoterLog([]byte{byte(j), byte(log.Len())}) + VoterLog(log) + v[k:]
		}
	}
	return v + VoterLog([]byte{byte(j), byte(log.Len())}) + VoterLog(log)
}

// Compare orders voter logs by their encoding.
func (v VoterLog) Compare(o VoterLog) int { return strings.Compare(string(v), string(o)) }

func (v VoterLog) String() string {
	var b strings.Builder
	b.WriteString("(")
	for _, j := range v.Dom().Members() {
		l, _ := v.Get(j)
		if b.Len() > 1 {
			b.WriteString(" @@ ")
		}
		fmt.Fprintf(&b, "%v :> %v", j, l)
	}
	b.WriteString(")")
	return b.String()
}

// MessageOf is a raft.tla message record. One struct holds every field; a
// field that its mtype does not carry is zero, so two messages are equal
// exactly when TLC would find the records equal.
//
// MleaderCommit is the durable profile's only addition: the leader's
// commitIndex before raft.tla's clamp Min({commitIndex, lastEntry}), from
// which followers learn what is committed (learnedCommit). It is always 0 in
// profile raft.
type MessageOf[T Int, L Seq[T, L]] struct {
	Mtype         MType
	Mterm         T
	MlastLogTerm  T
	MlastLogIndex T
	MprevLogIndex T
	MprevLogTerm  T
	Mentries      L
	Mlog          L
	McommitIndex  T
	MleaderCommit T
	MvoteGranted  bool
	Msuccess      bool
	MmatchIndex   T
	Msource       ServerID
	Mdest         ServerID
	// Mambiguous (RequestVoteResponse, power losses only): the grant of a
	// voter whose verdict is AMBIGUOUS, which counts only towards a
	// unanimous election (power.go). Always false otherwise.
	Mambiguous bool
}

// Message is the explorer's message.
type Message = MessageOf[uint8, Log]

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// compareMessage is a total order on messages, used to keep the bag sorted so
// that equal bags have equal encodings.
func compareMessage[T Int, L Seq[T, L]](a, b *MessageOf[T, L]) int {
	if c := cmp.Compare(a.Mtype, b.Mtype); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Msource, b.Msource); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Mdest, b.Mdest); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Mterm, b.Mterm); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MlastLogTerm, b.MlastLogTerm); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MlastLogIndex, b.MlastLogIndex); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MprevLogIndex, b.MprevLogIndex); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MprevLogTerm, b.MprevLogTerm); c != 0 {
		return c
	}
	if c := a.Mentries.Compare(b.Mentries); c != 0 {
		return c
	}
	if c := a.Mlog.Compare(b.Mlog); c != 0 {
		return c
	}
	if c := cmp.Compare(a.McommitIndex, b.McommitIndex); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MleaderCommit, b.MleaderCommit); c != 0 {
		return c
	}
	if c := boolCompare(a.MvoteGranted, b.MvoteGranted); c != 0 {
		return c
	}
	if c := boolCompare(a.Msuccess, b.Msuccess); c != 0 {
		return c
	}
	if c := boolCompare(a.Mambiguous, b.Mambiguous); c != 0 {
		return c
	}
	return cmp.Compare(a.MmatchIndex, b.MmatchIndex)
}

func (m MessageOf[T, L]) String() string {
	switch m.Mtype {
	case RequestVoteRequest:
		return fmt.Sprintf("RequestVoteRequest{%v->%v term=%d lastLogTerm=%d lastLogIndex=%d}",
			m.Msource, m.Mdest, m.Mterm, m.MlastLogTerm, m.MlastLogIndex)
	case RequestVoteResponse:
		if m.Mambiguous {
			return fmt.Sprintf("RequestVoteResponse{%v->%v term=%d granted=%v ambiguous}",
				m.Msource, m.Mdest, m.Mterm, m.MvoteGranted)
		}
		return fmt.Sprintf("RequestVoteResponse{%v->%v term=%d granted=%v}",
			m.Msource, m.Mdest, m.Mterm, m.MvoteGranted)
	case AppendEntriesRequest:
		return fmt.Sprintf("AppendEntriesRequest{%v->%v term=%d prev=(%d,%d) entries=%v commit=%d leaderCommit=%d}",
			m.Msource, m.Mdest, m.Mterm, m.MprevLogIndex, m.MprevLogTerm, m.Mentries, m.McommitIndex, m.MleaderCommit)
	case AppendEntriesResponse:
		return fmt.Sprintf("AppendEntriesResponse{%v->%v term=%d success=%v matchIndex=%d}",
			m.Msource, m.Mdest, m.Mterm, m.Msuccess, m.MmatchIndex)
	case InstallSnapshotRequest:
		return fmt.Sprintf("InstallSnapshotRequest{%v->%v term=%d prefix=%d entries leaderCommit=%d}",
			m.Msource, m.Mdest, m.Mterm, m.Mentries.Len(), m.MleaderCommit)
	case RepairRequest:
		return fmt.Sprintf("RepairRequest{%v->%v term=%d}", m.Msource, m.Mdest, m.Mterm)
	case RepairResponse:
		return fmt.Sprintf("RepairResponse{%v->%v term=%d log=%v}", m.Msource, m.Mdest, m.Mterm, m.Mentries)
	}
	return fmt.Sprintf("Message{%+v}", struct{ M MessageOf[T, L] }{m})
}

// ElectionOf is a record of the elections history variable, added by
// BecomeLeader.
type ElectionOf[T Int, L Seq[T, L], V Voters[L, V]] struct {
	Eterm     T
	Eleader   ServerID
	Elog      L
	Evotes    ServerSet
	EvoterLog V
}

// Election is the explorer's election record.
type Election = ElectionOf[uint8, Log, VoterLog]

func compareElection[T Int, L Seq[T, L], V Voters[L, V]](a, b *ElectionOf[T, L, V]) int {
	if c := cmp.Compare(a.Eterm, b.Eterm); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Eleader, b.Eleader); c != 0 {
		return c
	}
	if c := a.Elog.Compare(b.Elog); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Evotes, b.Evotes); c != 0 {
		return c
	}
	return a.EvoterLog.Compare(b.EvoterLog)
}

// CommittedOf is a record of the durable profile's committed history
// variable: the entry at Index with term Term was covered by a leader's
// commitIndex, first in term CommitTerm. Once there it stays: it is what a
// client was told is durable.
type CommittedOf[T Int] struct {
	Index      T
	Term       T
	CommitTerm T
	// Config is, with membership, the value of the configuration the
	// leader counted its quorum in (MemberConfig.Value); 0 without.
	Config uint8
}

// CommittedEntry is the explorer's committed record.
type CommittedEntry = CommittedOf[uint8]

// Concat is log \o suffix.
func (l Log) Concat(suffix Log) Log { return l + suffix }

// Equal reports l = o.
func (l Log) Equal(o Log) bool { return l == o }

// Compare orders logs entry by entry, (term, value) lexicographically, a
// prefix first.
func (l Log) Compare(o Log) int { return strings.Compare(string(l), string(o)) }

// HasPrefix reports whether p is a prefix of l.
func (l Log) HasPrefix(p Log) bool { return strings.HasPrefix(string(l), string(p)) }
