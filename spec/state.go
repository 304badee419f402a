package spec

import (
	"cmp"
	"slices"
)

// BagEntryOf is one message of the bag and its multiplicity: messages[m].
type BagEntryOf[T Int, L Seq[T, L]] struct {
	M MessageOf[T, L]
	N T
}

// BagEntry is the explorer's bag entry.
type BagEntry = BagEntryOf[uint8, Log]

// StateOf holds every variable of raft.tla, and in profile durable the
// variables the durability extensions add. Per-server arrays are indexed by
// ServerID; index 0 is unused and stays zero.
//
// A state is a value: successor states copy it and replace, never mutate,
// the slices (Messages, Elections, AllLogs, Committed), which are shared.
//
// The type parameters are the representation (docs/explorer.md, "State and
// encoding"): [State] is the explorer's (8-bit numbers, [Log]), [TraceState]
// the trace checker's (64-bit numbers, [RunLog], no history variables). The
// actions are written once, for both.
//
// Invariants (asserted by [State.Check]):
//   - Messages is sorted by compareMessage, without duplicates, every N >= 1.
//   - Elections, AllLogs and Committed are sorted sets without duplicates.
//   - durable: DurableLen[i] <= Len(Log[i]); Verdict[i] = Clean exactly when
//     TruncatedAtTerm[i] = 0.
//   - production: StaleDurable[i] <= Len(StaleLog[i]); every message of
//     Held[i] is from i to another server and is not an AppendEntries
//     request; Held[i] is empty while i's window is closed.
type StateOf[T Int, L Seq[T, L], V Voters[L, V]] struct {
	// Global variables of raft.tla.
	Messages  []BagEntryOf[T, L]    // messages: a bag, Message -> count
	Elections []ElectionOf[T, L, V] // elections: history variable
	AllLogs   []L                   // allLogs: history variable

	// Per-server variables of raft.tla.
	CurrentTerm    [MaxServers + 1]T
	State          [MaxServers + 1]Role
	VotedFor       [MaxServers + 1]ServerID
	Log            [MaxServers + 1]L
	CommitIndex    [MaxServers + 1]T
	VotesResponded [MaxServers + 1]ServerSet
	VotesGranted   [MaxServers + 1]ServerSet
	VoterLog       [MaxServers + 1]V
	NextIndex      [MaxServers + 1][MaxServers + 1]T
	MatchIndex     [MaxServers + 1][MaxServers + 1]T

	// Profile durable. All zero in profile raft.
	DurableLen      [MaxServers + 1]T // durableLen: the fdatasync'd prefix of log[i]
	LearnedCommit   [MaxServers + 1]T // learnedCommit: highest commit index i learned (durable hard state)
	Verdict         [MaxServers + 1]Verdict
	TruncatedAtTerm [MaxServers + 1]T // currentTerm[i] at the corruption that set Verdict[i] = Truncated
	// StaleLog: without the production actions, only with -bug
	// truncation-not-synced (empty otherwise): the durable log as it was
	// before a suffix truncation that no flush has synced yet, which a
	// crash may bring back. In the production profile: the log as it was
	// when i's persistence window opened (window.go), which a crash inside
	// the window may bring back, with StaleDurable its durable length.
	StaleLog        [MaxServers + 1]L
	Committed       []CommittedOf[T] // committed: history variable
	CrashesLeft     T
	CorruptionsLeft T
	BadCommitsLeft  T // badCommitsLeft: CorruptLeaderCommit's budget (badcommit.go)

	// Power losses (power.go); zero without them. BatchStart[i] is the
	// durable length before i's last flush: durableLen[i] - BatchStart[i]
	// entries are the last synced batch, which nothing vouches for yet.
	// VotesAmbiguous[i] are the grants of votesGranted[i] that came from
	// AMBIGUOUS voters. Damaged (history: the environment's budget) are
	// the members whose last synced batch a power loss damaged, until
	// they are repaired.
	BatchStart      [MaxServers + 1]T
	VotesAmbiguous  [MaxServers + 1]ServerSet
	Damaged         ServerSet
	PowerLossesLeft T

	// The production profile's persistence window (window.go); zero
	// otherwise. Persisted[i] is the durable copy of i's hard state, the
	// one a crash may return to; Held[i] the messages i sent while its
	// window was open (a bag, not yet on the network).
	Persisted    [MaxServers + 1]PersistedOf[T]
	Held         [MaxServers + 1][]BagEntryOf[T, L]
	StaleDurable [MaxServers + 1]T

	// Repair from peers (repair.go); zero without Config.Repair.
	// RepairFrom[i]: the peers whose answers a TRUNCATED i has taken in
	// since its corruption (volatile). Repairs (history): every release by
	// repair, with the log the member was released with.
	RepairFrom [MaxServers + 1]ServerSet
	Repairs    []RepairOf[T, L]
	// Wipes (wipe.go); zero without them.
	Wipe WipeVarsOf[T]
}

// Persisted is the explorer's durable hard state.
type Persisted = PersistedOf[uint8]

// PersistedOf is a server's durable hard state in the production profile:
// currentTerm, votedFor and truncatedAtTerm as the disk holds them
// (learnedCommit is not hard state there: docs/durable-raft.md).
type PersistedOf[T Int] struct {
	CurrentTerm     T
	VotedFor        ServerID
	TruncatedAtTerm T
}

// State is the explorer's state.
type State = StateOf[uint8, Log, VoterLog]

// Init is raft.tla's Init (and, in profile durable, InitDurableVars).
func (m *Machine[T, L, V]) Init() *StateOf[T, L, V] {
	s := &StateOf[T, L, V]{}
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
		s.CrashesLeft = T(m.Crashes)
		s.CorruptionsLeft = T(m.Corruptions)
		s.BadCommitsLeft = T(m.BadCommits)
		s.PowerLossesLeft = T(m.PowerLosses)
	}
	m.initWipe(s)
	if m.Production {
		for _, i := range m.servers {
			s.Persisted[i] = PersistedOf[T]{CurrentTerm: 1, VotedFor: Nil}
		}
	}
	return s
}

// bagIndex returns the position of msg in the sorted bag, or where it would go.
func bagIndex[T Int, L Seq[T, L]](bag []BagEntryOf[T, L], msg *MessageOf[T, L]) (int, bool) {
	return slices.BinarySearchFunc(bag, msg, func(e BagEntryOf[T, L], t *MessageOf[T, L]) int {
		return compareMessage(&e.M, t)
	})
}

// WithMessage is raft.tla's WithMessage(m, msgs): one more m in the bag.
func WithMessage[T Int, L Seq[T, L]](msg MessageOf[T, L], bag []BagEntryOf[T, L]) []BagEntryOf[T, L] {
	k, found := bagIndex(bag, &msg)
	out := make([]BagEntryOf[T, L], 0, len(bag)+1)
	out = append(out, bag[:k]...)
	if found {
		out = append(out, BagEntryOf[T, L]{M: msg, N: bag[k].N + 1})
		return append(out, bag[k+1:]...)
	}
	out = append(out, BagEntryOf[T, L]{M: msg, N: 1})
	return append(out, bag[k:]...)
}

// WithoutMessage is raft.tla's WithoutMessage(m, msgs): one less m in the bag
// (unchanged if m is not in it).
func WithoutMessage[T Int, L Seq[T, L]](msg MessageOf[T, L], bag []BagEntryOf[T, L]) []BagEntryOf[T, L] {
	k, found := bagIndex(bag, &msg)
	if !found {
		return bag
	}
	if bag[k].N <= 1 {
		out := make([]BagEntryOf[T, L], 0, len(bag)-1)
		out = append(out, bag[:k]...)
		return append(out, bag[k+1:]...)
	}
	out := slices.Clone(bag)
	out[k].N--
	return out
}

// Send is raft.tla's Send(m).
func (s *StateOf[T, L, V]) Send(m MessageOf[T, L]) { s.Messages = WithMessage(m, s.Messages) }

// Discard is raft.tla's Discard(m).
func (s *StateOf[T, L, V]) Discard(m MessageOf[T, L]) { s.Messages = WithoutMessage(m, s.Messages) }

// Reply is raft.tla's Reply(response, request).
func (s *StateOf[T, L, V]) Reply(response, request MessageOf[T, L]) {
	s.Messages = WithoutMessage(request, WithMessage(response, s.Messages))
}

// Count is messages[m], or 0 when m is not in DOMAIN messages.
func (s *StateOf[T, L, V]) Count(m MessageOf[T, L]) int {
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

func compareLog[T Int, L Seq[T, L]](a, b *L) int { return (*a).Compare(*b) }

func compareCommitted[T Int](a, b *CommittedOf[T]) int {
	if c := cmp.Compare(a.Index, b.Index); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Term, b.Term); c != 0 {
		return c
	}
	if c := cmp.Compare(a.CommitTerm, b.CommitTerm); c != 0 {
		return c
	}
	return cmp.Compare(a.Config, b.Config)
}

// withLogs is allLogs \cup {log[i] : i \in Server}.
func (m *Machine[T, L, V]) withLogs(all []L, s *StateOf[T, L, V]) []L {
	for _, i := range m.servers {
		all = insertSorted(all, s.Log[i], compareLog[T, L])
	}
	return all
}

// Quorum reports set \in Quorum: Cardinality(set) * 2 > Cardinality(Server)
// (>= with BugQuorumHalf).
func (m *Machine[T, L, V]) Quorum(set ServerSet) bool {
	n := len(m.servers)
	if m.Has(BugQuorumHalf) {
		n-- // Cardinality(set) * 2 > n - 1, that is >= n
	}
	return set.Len()*2 > n
}

// Servers lists Server.
func (m *Machine[T, L, V]) Servers() []ServerID { return m.servers }
