package spec

import (
	"slices"
	"strings"
)

// BagEntry is one message of the bag and its multiplicity: messages[m].
type BagEntry struct {
	M Message
	N uint8
}

// State holds every variable of raft.tla, and in profile durable the
// variables the durability extensions add. Per-server arrays are indexed by
// ServerID; index 0 is unused and stays zero.
//
// A State is a value: successor states copy it and replace, never mutate,
// the slices (Messages, Elections, AllLogs, Committed), which are shared.
//
// Invariants (asserted by [State.Check]):
//   - Messages is sorted by compareMessage, without duplicates, every N >= 1.
//   - Elections, AllLogs and Committed are sorted sets without duplicates.
//   - durable: DurableLen[i] <= Len(Log[i]); Verdict[i] = Clean exactly when
//     TruncatedAtTerm[i] = 0.
type State struct {
	// Global variables of raft.tla.
	Messages  []BagEntry // messages: a bag, Message -> count
	Elections []Election // elections: history variable
	AllLogs   []Log      // allLogs: history variable

	// Per-server variables of raft.tla.
	CurrentTerm    [MaxServers + 1]uint8
	State          [MaxServers + 1]Role
	VotedFor       [MaxServers + 1]ServerID
	Log            [MaxServers + 1]Log
	CommitIndex    [MaxServers + 1]uint8
	VotesResponded [MaxServers + 1]ServerSet
	VotesGranted   [MaxServers + 1]ServerSet
	VoterLog       [MaxServers + 1]VoterLog
	NextIndex      [MaxServers + 1][MaxServers + 1]uint8
	MatchIndex     [MaxServers + 1][MaxServers + 1]uint8

	// Profile durable. All zero in profile raft.
	DurableLen      [MaxServers + 1]uint8 // durableLen: the fdatasync'd prefix of log[i]
	LearnedCommit   [MaxServers + 1]uint8 // learnedCommit: highest commit index i learned (durable hard state)
	Verdict         [MaxServers + 1]Verdict
	TruncatedAtTerm [MaxServers + 1]uint8 // currentTerm[i] at the corruption that set Verdict[i] = Truncated
	// StaleLog, only with -bug truncation-not-synced (empty otherwise): the durable
	// log as it was before a suffix truncation that no flush has synced yet, which a
	// crash may bring back. Empty when no such truncation is pending.
	StaleLog        [MaxServers + 1]Log
	Committed       []CommittedEntry // committed: history variable
	CrashesLeft     uint8
	CorruptionsLeft uint8
}

// Init is raft.tla's Init (and, in profile durable, InitDurableVars).
func (m *Model) Init() *State {
	s := &State{}
	for _, i := range m.servers {
		s.CurrentTerm[i] = 1
		s.State[i] = Follower
		s.VotedFor[i] = Nil
		for _, j := range m.servers {
			s.NextIndex[i][j] = 1
			s.MatchIndex[i][j] = 0
		}
	}
	if m.Profile == ProfileDurable {
		s.CrashesLeft = uint8(m.Crashes)
		s.CorruptionsLeft = uint8(m.Corruptions)
	}
	return s
}

// bagIndex returns the position of msg in the sorted bag, or where it would go.
func bagIndex(bag []BagEntry, msg *Message) (int, bool) {
	return slices.BinarySearchFunc(bag, msg, func(e BagEntry, t *Message) int {
		return compareMessage(&e.M, t)
	})
}

// WithMessage is raft.tla's WithMessage(m, msgs): one more m in the bag.
func WithMessage(msg Message, bag []BagEntry) []BagEntry {
	k, found := bagIndex(bag, &msg)
	out := make([]BagEntry, 0, len(bag)+1)
	out = append(out, bag[:k]...)
	if found {
		out = append(out, BagEntry{M: msg, N: bag[k].N + 1})
		return append(out, bag[k+1:]...)
	}
	out = append(out, BagEntry{M: msg, N: 1})
	return append(out, bag[k:]...)
}

// WithoutMessage is raft.tla's WithoutMessage(m, msgs): one less m in the bag
// (unchanged if m is not in it).
func WithoutMessage(msg Message, bag []BagEntry) []BagEntry {
	k, found := bagIndex(bag, &msg)
	if !found {
		return bag
	}
	if bag[k].N <= 1 {
		out := make([]BagEntry, 0, len(bag)-1)
		out = append(out, bag[:k]...)
		return append(out, bag[k+1:]...)
	}
	out := slices.Clone(bag)
	out[k].N--
	return out
}

// Send is raft.tla's Send(m).
func (s *State) Send(m Message) { s.Messages = WithMessage(m, s.Messages) }

// Discard is raft.tla's Discard(m).
func (s *State) Discard(m Message) { s.Messages = WithoutMessage(m, s.Messages) }

// Reply is raft.tla's Reply(response, request).
func (s *State) Reply(response, request Message) {
	s.Messages = WithoutMessage(request, WithMessage(response, s.Messages))
}

// Count is messages[m], or 0 when m is not in DOMAIN messages.
func (s *State) Count(m Message) int {
	if k, ok := bagIndex(s.Messages, &m); ok {
		return int(s.Messages[k].N)
	}
	return 0
}

// insertSorted returns set \cup {x} for a sorted slice, sharing set when x
// is already there.
func insertSorted[T any](set []T, x T, compare func(a, b *T) int) []T {
	k, found := slices.BinarySearchFunc(set, &x, func(e T, t *T) int { return compare(&e, t) })
	if found {
		return set
	}
	out := make([]T, 0, len(set)+1)
	out = append(out, set[:k]...)
	out = append(out, x)
	return append(out, set[k:]...)
}

func compareLog(a, b *Log) int { return strings.Compare(string(*a), string(*b)) }

func compareCommitted(a, b *CommittedEntry) int {
	if a.Index != b.Index {
		return int(a.Index) - int(b.Index)
	}
	if a.Term != b.Term {
		return int(a.Term) - int(b.Term)
	}
	return int(a.CommitTerm) - int(b.CommitTerm)
}

// withLogs is allLogs \cup {log[i] : i \in Server}.
func (m *Model) withLogs(all []Log, s *State) []Log {
	for _, i := range m.servers {
		all = insertSorted(all, s.Log[i], compareLog)
	}
	return all
}

// Quorum reports set \in Quorum: Cardinality(set) * 2 > Cardinality(Server).
func (m *Model) Quorum(set ServerSet) bool { return set.Len()*2 > len(m.servers) }

// Servers lists Server.
func (m *Model) Servers() []ServerID { return m.servers }
