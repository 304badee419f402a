package spec

import (
	"fmt"
	"slices"
	"strings"
)

// Profile selects the protocol: raft.tla itself, or raft.tla with the
// durability extensions.
type Profile uint8

// Profiles.
const (
	ProfileRaft Profile = iota
	ProfileDurable
)

func (p Profile) String() string {
	if p == ProfileDurable {
		return "durable"
	}
	return "raft"
}

// ParseProfile parses "raft" or "durable".
func ParseProfile(s string) (Profile, error) {
	switch s {
	case "raft":
		return ProfileRaft, nil
	case "durable":
		return ProfileDurable, nil
	}
	return 0, fmt.Errorf("unknown profile %q (want raft or durable)", s)
}

// Bug switches off one fix of the durable profile, or one rule of raft.tla
// itself (the classic bugs, below), so that the failure it prevents can be
// replayed. docs/durable-raft.md records, for each fix, the smallest bounds
// at which the explorer finds the violation; docs/explorer.md, "The classic
// bugs", the runs that find the classic ones (make reach).
type Bug uint32

// The fixes that can be switched off.
const (
	// BugSelfCountsAppended: the leader counts itself in the commit majority
	// at Len(log) instead of durableLen (the seed's bug-661).
	BugSelfCountsAppended Bug = 1 << iota
	// BugFollowerAcksAppended: a follower replies success for entries it has
	// appended but not yet flushed.
	BugFollowerAcksAppended
	// BugCandidateAdvertisesLearned: a candidate advertises
	// Max(durableLen, learnedCommit) as its last log index (the seed's
	// over-advertisement).
	BugCandidateAdvertisesLearned
	// BugCandidateAdvertisesAppended: a candidate advertises its whole log,
	// synced or not, as raft.tla does.
	BugCandidateAdvertisesAppended
	// BugNoVoterLearnedFloor: a voter does not require the candidate's
	// durable index to reach what the voter learned as committed.
	BugNoVoterLearnedFloor
	// BugNoPromotionFence: a TRUNCATED member, or one whose durable log is
	// below what it learned as committed, may become leader.
	BugNoPromotionFence
	// BugTruncatedMemberVotes: a TRUNCATED member grants votes.
	BugTruncatedMemberVotes
	// BugReleaseAtLeaderCommit: the fence releases as soon as the member's
	// durable match reaches the commit index of the AppendEntries it
	// accepts, whatever that leader's term.
	BugReleaseAtLeaderCommit
	// BugTruncationNotSynced: a suffix truncation (the conflict branch) is
	// not durable until the next flush: a crash before it may bring back
	// the durable log as it was before the truncation (impl/wal's
	// TruncateSuffix without the driver's sync, docs/refinement.md). In the
	// production profile the truncation then does not hold the node (it
	// is not part of the persistence window).
	BugTruncationNotSynced
	// BugMarkAfterCut (production profile only): a Corrupt makes the cut
	// of the log durable at once (wal.Open writes it) but the TRUNCATED
	// mark (truncatedAtTerm) only with the node's next Persist, so a crash
	// in between boots the cut log CLEAN (the boot window).
	BugMarkAfterCut
	// BugLearnedCommitUnclamped (production profile only): a follower
	// learns m.mleaderCommit as it comes, unclamped (the rule before issue
	// 10 item 5), instead of Min(m.mleaderCommit, m.mprevLogIndex +
	// Len(m.mentries)), what the message proves it holds: one corrupted
	// value then fences the member and raises its voter floor for ever.
	BugLearnedCommitUnclamped
	// BugAmbiguousTailClean (power losses only): a boot that finds its last
	// batch damaged with nothing vouching for it calls it a torn unsynced
	// tail and boots CLEAN (impl/wal's TORN_TAIL before issue 10 item 2),
	// although the batch may have been synced and acknowledged.
	BugAmbiguousTailClean
	// BugAmbiguousWithholdsVote (power losses only): an AMBIGUOUS member
	// grants no vote, as a TRUNCATED one does, instead of a grant that
	// counts towards a unanimous election: after a whole-cluster power
	// loss that leaves a quorum AMBIGUOUS nobody can be elected (the
	// liveness check's counterexample).
	BugAmbiguousWithholdsVote

	// The classic bugs: one rule of raft.tla itself removed (issue 20).
	// Each is a switch of either profile.

	// BugVoteIgnoresLogIndex: the up-to-date check of
	// HandleRequestVoteRequest without its index clause: a voter grants a
	// candidate whose last term equals its own, however short its log.
	BugVoteIgnoresLogIndex
	// BugCommitPriorTerm: AdvanceCommitIndex without its current-term
	// condition: a leader commits an entry of an earlier term by counting
	// replicas (Figure 8 of the Raft paper).
	BugCommitPriorTerm
	// BugAppendIgnoresLogOk: HandleAppendEntriesRequest treats logOk as
	// true: a follower accepts entries (and acknowledges a match) whatever
	// it holds at mprevLogIndex (the production batch handler keeps it).
	BugAppendIgnoresLogOk
	// BugVoteIgnoresVotedFor: a server grants a vote whatever votedFor
	// says, so it may vote twice in one term.
	BugVoteIgnoresVotedFor
	// BugQuorumHalf: a quorum is half of the servers
	// (Cardinality(q) * 2 >= Cardinality(Server)).
	BugQuorumHalf
	// BugRestartForgetsVote: a restart (Restart, Crash, Corrupt) keeps the
	// term but loses the vote: votedFor comes back Nil.
	BugRestartForgetsVote

	// Membership change (membership.go, docs/membership.md): switches of
	// either profile, with Config.Membership only.

	// BugConfigBeforeOwnTermCommit: a leader appends a configuration
	// change before it has committed an entry of its own term (the
	// single-server change bug Ongaro reported in 2015).
	BugConfigBeforeOwnTermCommit
	// BugConfigWhileUncommitted: a leader appends a configuration change
	// while its previous one is not committed yet.
	BugConfigWhileUncommitted

	// Repair of a TRUNCATED member from its peers (repair.go,
	// docs/repair.md): switches of profile durable, with Config.Repair only.

	// BugRepairVotesEarly: a TRUNCATED member is released (votes again)
	// after the first peer's answer, not once the peers that answered meet
	// every quorum.
	BugRepairVotesEarly
	// BugRepairIgnoresTerm: a TRUNCATED member asks for repair in the
	// corruption's own term and counts a peer's answer given in a term no
	// newer than the corruption's (truncatedAtTerm), although that peer
	// may still acknowledge, after answering, entries the member's lost
	// acknowledgments help commit.
	BugRepairIgnoresTerm
	// Wiped members (wipe.go): switches of either profile, with
	// Config.Wipes only.

	// BugWipedVotes: a member whose data directory was wiped boots as
	// an ordinary first boot, with nothing confirmed by its peers: it
	// votes and campaigns at once (the code before issue 18).
	BugWipedVotes
	// BugWipeConfirmQuorum: a first boot is confirmed by a majority of
	// the configuration other than itself instead of by every other
	// member.
	BugWipeConfirmQuorum

	bugEnd

	classicBugs = BugVoteIgnoresLogIndex | BugCommitPriorTerm | BugAppendIgnoresLogOk |
		BugVoteIgnoresVotedFor | BugQuorumHalf | BugRestartForgetsVote

	membershipBugs = BugConfigBeforeOwnTermCommit | BugConfigWhileUncommitted

	powerLossBugs = BugAmbiguousTailClean | BugAmbiguousWithholdsVote

	repairBugs = BugRepairVotesEarly | BugRepairIgnoresTerm
	wipeBugs   = BugWipedVotes | BugWipeConfirmQuorum

	// protocolBugs are the switches profile raft takes.
	protocolBugs = classicBugs | membershipBugs | wipeBugs
)

var bugNames = map[Bug]string{
	BugSelfCountsAppended:          "self-counts-appended",
	BugFollowerAcksAppended:        "follower-acks-appended",
	BugCandidateAdvertisesLearned:  "candidate-advertises-learned",
	BugCandidateAdvertisesAppended: "candidate-advertises-appended",
	BugNoVoterLearnedFloor:         "no-voter-learned-floor",
	BugNoPromotionFence:            "no-promotion-fence",
	BugTruncatedMemberVotes:        "truncated-member-votes",
	BugReleaseAtLeaderCommit:       "release-at-leader-commit",
	BugTruncationNotSynced:         "truncation-not-synced",
	BugVoteIgnoresLogIndex:         "vote-ignores-log-index",
	BugCommitPriorTerm:             "commit-prior-term",
	BugAppendIgnoresLogOk:          "append-ignores-logok",
	BugVoteIgnoresVotedFor:         "vote-ignores-votedfor",
	BugQuorumHalf:                  "quorum-half",
	BugRestartForgetsVote:          "restart-forgets-vote",
	BugMarkAfterCut:                "mark-after-cut",
	BugLearnedCommitUnclamped:      "learned-commit-unclamped",
	BugAmbiguousTailClean:          "ambiguous-tail-clean",
	BugAmbiguousWithholdsVote:      "ambiguous-withholds-vote",
	BugConfigBeforeOwnTermCommit:   "config-before-own-term-commit",
	BugConfigWhileUncommitted:      "config-while-uncommitted",
	BugRepairVotesEarly:            "repair-votes-early",
	BugRepairIgnoresTerm:           "repair-ignores-term",
	BugWipedVotes:                  "wiped-votes",
	BugWipeConfirmQuorum:           "wipe-confirm-quorum",
}

func (b Bug) String() string {
	var names []string
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		if b&bit != 0 {
			names = append(names, bugNames[bit])
		}
	}
	return strings.Join(names, ",")
}

// AllBugs lists every switch by name.
func AllBugs() []string {
	var names []string
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		names = append(names, bugNames[bit])
	}
	return names
}

// ClassicBugs lists by name the switches of raft.tla's own rules (the
// classic bugs): the others switch a fix of the durable profile off.
func ClassicBugs() []string {
	var names []string
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		if bit&classicBugs != 0 {
			names = append(names, bugNames[bit])
		}
	}
	return names
}

// MembershipBugs lists by name the switches of the membership rules
// (membership.go).
func MembershipBugs() []string {
	var names []string
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		if bit&membershipBugs != 0 {
			names = append(names, bugNames[bit])
		}
	}
	return names
}

// PowerLossBugs lists by name the switches of the power-loss rule
// (power.go), which the core does not implement yet (issue 10 item 2).
func PowerLossBugs() []string {
	var names []string
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		if bit&powerLossBugs != 0 {
			names = append(names, bugNames[bit])
		}
	}
	return names
}

// ParseBugs parses a comma-separated list of bug names.
func ParseBugs(s string) (Bug, error) {
	var b Bug
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := false
		for bit, n := range bugNames {
			if n == name {
				b |= bit
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown bug %q (known: %s)", name, strings.Join(AllBugs(), ", "))
		}
	}
	return b, nil
}

// Config is the model's constants and the explorer's bounds.
type Config struct {
	Profile Profile
	Servers int // Cardinality(Server), 1..MaxServers
	Values  int // Cardinality(Value)

	// Bounds, as TLC's CONSTRAINT:
	//   \A i \in Server : currentTerm[i] <= MaxTerm /\ Len(log[i]) <= MaxLog
	//   \A m \in DOMAIN messages : messages[m] <= MaxDup
	//   Cardinality(DOMAIN messages) <= MaxMsgs
	MaxTerm, MaxLog, MaxDup, MaxMsgs int

	// Budgets of the durable profile: how many Crash and Corrupt steps a
	// behaviour may take in all. They are state (crashesLeft,
	// corruptionsLeft), so they are fingerprinted.
	Crashes, Corruptions int
	// BadCommits (production profile only): how many AppendEntries
	// requests of the bag may have their mleaderCommit raised by the
	// environment (CorruptLeaderCommit, badcommit.go): a peer's bad value
	// that passes every check the receiver can make. State
	// (badCommitsLeft), fingerprinted when not 0.
	BadCommits int
	// PowerLosses (durable profile, without the production actions and
	// membership): how many PowerLoss steps a behaviour may take in all
	// (power.go): a reboot after a power cut that tore the member's
	// unsynced tail or damaged its last synced batch at rest. A
	// whole-cluster power loss is one PowerLoss per member. State
	// (powerLossesLeft), fingerprinted when not 0.
	PowerLosses int

	Bugs Bug

	// Production adds the actions of the production core (production.go)
	// to profile durable, and its persistence window (window.go): hard
	// state and suffix truncations become durable at Persist, learnedCommit
	// is not hard state.
	Production bool

	// Membership puts configurations in the log and adds ChangeConfig
	// (membership.go, docs/membership.md). InitVoters: servers
	// 1..InitVoters are the initial voters, the others not members (0:
	// every server is a voter).
	Membership bool
	InitVoters int

	// Repair adds the repair of a TRUNCATED member from its peers, without
	// a leader (repair.go, docs/repair.md): RequestRepair and its answer.
	// Profile durable only, without the production actions, membership and
	// power losses.
	Repair bool

	// MarkedVotes (profile durable; issue 10 item 2, the rule impl/raft
	// runs): every voter that is not CLEAN grants, against its durable
	// log, marked (a TRUNCATED one as an AMBIGUOUS one does, instead of no
	// vote), and a candidate that is not CLEAN may become leader on a
	// unanimous election (then CLEAN). Off: the rule of power.go (a
	// TRUNCATED member grants none and never leads), whose liveness hole
	// (a TRUNCATED and an AMBIGUOUS member of three wedge the cluster)
	// docs/durable-raft.md records. Opt-in so that the state counts of the
	// documented bounds stay; votesAmbiguous is state (fingerprinted)
	// with power losses or MarkedVotes.
	MarkedVotes bool

	// Wipes: how many Wipe steps a behaviour may take in all (wipe.go):
	// a member's data directory emptied, the member restarted under its
	// old id. With Wipes > 0 every first boot (Init's too) must be
	// confirmed by its peers before the member votes or campaigns. State
	// (wipesLeft and the confirmation variables), fingerprinted when not 0.
	Wipes int
}

// Validate checks that the constants are in range.
func (c Config) Validate() error {
	switch {
	case c.Servers < 1 || c.Servers > MaxServers:
		return fmt.Errorf("servers=%d: want 1..%d", c.Servers, MaxServers)
	case c.Values < 1 || c.Values > 200:
		return fmt.Errorf("values=%d: want 1..200", c.Values)
	case c.MaxTerm < 1 || c.MaxTerm > 200:
		return fmt.Errorf("max-term=%d: want 1..200", c.MaxTerm)
	case c.MaxLog < 0 || c.MaxLog > 100:
		return fmt.Errorf("max-log=%d: want 0..100", c.MaxLog)
	case c.MaxDup < 1 || c.MaxDup > 200:
		return fmt.Errorf("max-dup=%d: want 1..200", c.MaxDup)
	case c.MaxMsgs < 0:
		return fmt.Errorf("max-msgs=%d: want >= 0", c.MaxMsgs)
	case c.Crashes < 0 || c.Crashes > 200 || c.Corruptions < 0 || c.Corruptions > 200:
		return fmt.Errorf("crashes=%d corruptions=%d: want 0..200", c.Crashes, c.Corruptions)
	case c.Profile == ProfileRaft && (c.Crashes != 0 || c.Corruptions != 0 || c.Bugs&^protocolBugs != 0):
		return fmt.Errorf("profile raft has no crash or corruption budgets, and of the bug switches only raft.tla's own and membership's (%v)", protocolBugs)
	case c.Profile == ProfileRaft && c.Production:
		return fmt.Errorf("the production actions extend profile durable only")
	case c.Bugs&BugMarkAfterCut != 0 && !c.Production:
		return fmt.Errorf("-bug mark-after-cut needs the production actions (the persistence window)")
	case c.Bugs&BugLearnedCommitUnclamped != 0 && !c.Production:
		return fmt.Errorf("-bug learned-commit-unclamped needs the production actions (the durable profile keeps its unclamped rule)")
	case c.BadCommits < 0 || c.BadCommits > 200 || (c.BadCommits > 0 && !c.Production):
		return fmt.Errorf("bad-commits=%d: want 0..200, and the production actions", c.BadCommits)
	case c.PowerLosses < 0 || c.PowerLosses > 200 || (c.PowerLosses > 0 && (c.Profile != ProfileDurable || c.Membership)):
		return fmt.Errorf("power-losses=%d: want 0..200, profile durable, without membership", c.PowerLosses)
	case c.MarkedVotes && c.Profile != ProfileDurable:
		return fmt.Errorf("marked-votes: profile durable only")
	case c.Bugs&(BugAmbiguousTailClean|BugAmbiguousWithholdsVote) != 0 && c.PowerLosses == 0:
		return fmt.Errorf("-bug %v needs power losses (-power-losses)", c.Bugs&(BugAmbiguousTailClean|BugAmbiguousWithholdsVote))
	}
	if err := c.validateMembership(); err != nil {
		return err
	}
	if err := c.validateWipes(); err != nil {
		return err
	}
	return c.validateRepair()
}

func (c Config) String() string {
	s := fmt.Sprintf("profile=%v servers=%d values=%d max-term=%d max-log=%d max-dup=%d max-msgs=%d",
		c.Profile, c.Servers, c.Values, c.MaxTerm, c.MaxLog, c.MaxDup, c.MaxMsgs)
	if c.Profile == ProfileDurable {
		s += fmt.Sprintf(" crashes=%d corruptions=%d", c.Crashes, c.Corruptions)
		if c.BadCommits > 0 {
			s += fmt.Sprintf(" bad-commits=%d", c.BadCommits)
		}
		if c.PowerLosses > 0 {
			s += fmt.Sprintf(" power-losses=%d", c.PowerLosses)
		}
	}
	if c.Bugs != 0 {
		s += " bugs=" + c.Bugs.String()
	}
	if c.Production {
		s += " production"
	}
	if c.Membership {
		s += fmt.Sprintf(" membership init-voters=%d", c.InitConfig().Voters.Len())
	}
	if c.Repair {
		s += " repair"
	}
	if c.MarkedVotes {
		s += " marked-votes"
	}
	if c.Wipes > 0 {
		s += fmt.Sprintf(" wipes=%d", c.Wipes)
	}
	return s
}

// Machine is a Config ready to take steps over states of one
// representation: the actions (actions_*.go, production.go) and Init, Next
// and Step are its methods, written once for every representation.
// history says whether the history variables (elections, allLogs,
// voterLog, committed, and every message's mlog) are kept: the explorer
// keeps them, because its invariants read them; the trace checker does
// not, because no action reads them (docs/explorer.md, "State and
// encoding").
type Machine[T Int, L Seq[T, L], V Voters[L, V]] struct {
	Config
	servers []ServerID
	values  []uint8
	history bool
}

func newMachine[T Int, L Seq[T, L], V Voters[L, V]](c Config, history bool) Machine[T, L, V] {
	m := Machine[T, L, V]{Config: c, history: history}
	for i := 1; i <= c.Servers; i++ {
		m.servers = append(m.servers, ServerID(i))
	}
	for v := 1; v <= c.Values; v++ {
		m.values = append(m.values, uint8(v))
	}
	return m
}

// Model is the explorer's machine: 8-bit numbers, logs as [Log], history
// variables kept. Its own methods (Encode, Decode, InBounds, the
// invariants) are the explorer's.
type Model struct {
	Machine[uint8, Log, VoterLog]
}

// NewModel validates the config and returns its model.
func NewModel(c Config) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Model{Machine: newMachine[uint8, Log, VoterLog](c, true)}, nil
}

// Has reports whether bug b is switched on (its fix is off).
func (c *Config) Has(b Bug) bool { return c.Bugs&b != 0 }

// durable reports whether the durable profile is in force.
func (c *Config) durable() bool { return c.Profile == ProfileDurable }

// InBounds is the CONSTRAINT: whether s is counted and explored. The
// messages held by the production profile's persistence windows count as
// messages (MaxMsgs, MaxDup):
//
//	/\ Cardinality(DOMAIN messages) + Sum(Cardinality(DOMAIN held[i])) <= MaxMsgs
//	/\ \A i \in Server, m \in DOMAIN held[i] : held[i][m] <= MaxDup
func (m *Model) InBounds(s *State) bool {
	for _, i := range m.servers {
		if int(s.CurrentTerm[i]) > m.MaxTerm || s.Log[i].Len() > m.MaxLog {
			return false
		}
	}
	over := func(e BagEntry) bool { return int(e.N) > m.MaxDup }
	msgs := len(s.Messages)
	for _, i := range m.servers {
		if slices.ContainsFunc(s.Held[i], over) {
			return false
		}
		msgs += len(s.Held[i])
	}
	return msgs <= m.MaxMsgs && !slices.ContainsFunc(s.Messages, over)
}
