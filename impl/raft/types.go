package raft

import (
	"errors"
	"fmt"
)

// NodeID names a member. 0 is "none".
type NodeID uint64

// None is the NodeID of nobody: no vote, no known leader.
const None NodeID = 0

// Limits on every term and index the core accepts from a peer, its storage
// or its caller. They keep term+1 and index+n far from overflow, so that a
// peer-supplied 2^64-1 is refused at the gate instead of wrapping.
const (
	TermMax  uint64 = 1 << 62
	IndexMax uint64 = 1 << 62
)

// The hard bounds on one AppendEntries, whatever the configuration: what a
// receiver accepts (Validate) and a transport should decode with
// (UnmarshalMessage(b, WireEntriesMax, WireBytesMax)). Config's
// MsgEntriesMax, MsgBytesMax and EntryBytesMax bound what a node sends and
// proposes and must stay within them; a receiver never checks a peer's
// message against its own Config, so members configured differently (a
// rolling change of the limits) still replicate to each other. An entry
// accepted once is therefore at most WireBytesMax, and a leader with a
// smaller MsgBytesMax still sends it, alone in its message. (The WAL under
// a node must take such a record: wal.Options.EntryBytesMax at least the
// largest EntryBytesMax of any member.)
const (
	WireEntriesMax        = 1 << 14
	WireBytesMax   uint64 = 16 << 20
)

// Entry is a log entry. Data is opaque to the core; the core never mutates
// it and keeps references, so the caller must not mutate it either.
type Entry struct {
	Index uint64
	Term  uint64
	Data  []byte
}

// HardState is what must be durable before any message that depends on it
// leaves: raft.tla's currentTerm and votedFor, and the durable profile's
// learnedCommit and truncatedAtTerm (docs/durable-raft.md). It is the
// layout of impl/wal's HardState, field for field.
//
// Invariants: Term >= 1 once the node has booted; TruncatedAtTerm <= Term;
// TruncatedAtTerm = 0 exactly when the member is not fenced for corruption.
type HardState struct {
	Term            uint64
	Vote            NodeID
	LearnedCommit   uint64 // spec learnedCommit: the highest commit index learned
	TruncatedAtTerm uint64 // spec truncatedAtTerm: term of the corrupted boot, 0 when repaired
	// Ambiguous: the mark TruncatedAtTerm is an AMBIGUOUS one (spec
	// verdict AMBIGUOUS, spec/power.go: a boot whose last batch was damaged,
	// VerdictAmbiguous), not a TRUNCATED one. Never set without
	// TruncatedAtTerm.
	Ambiguous bool
}

// Verdict is the recovery verdict of the WAL at this boot (impl/wal's
// Recovery.Verdict), handed in through Boot; the core does not import the
// WAL.
type Verdict uint8

// The recovery verdicts.
const (
	VerdictClean Verdict = iota + 1
	// VerdictTornTail: an unsynced last batch was dropped; nothing durable
	// was lost, so it is CLEAN for the protocol.
	VerdictTornTail
	// VerdictTruncated: the log lost entries inside its durable prefix.
	VerdictTruncated
	// VerdictAmbiguous: the last batch failed verification and nothing
	// vouched for it (impl/wal row R6): a write torn before its fdatasync,
	// or a synced, possibly acknowledged batch damaged at rest; the log is
	// cut before it. Spec PowerLoss: the member is AMBIGUOUS (marked with
	// HardState.TruncatedAtTerm and Ambiguous) until repaired; it votes,
	// but its grants count only towards a unanimous election.
	VerdictAmbiguous
)

func (v Verdict) String() string {
	switch v {
	case VerdictClean:
		return "CLEAN"
	case VerdictTornTail:
		return "TORN_TAIL"
	case VerdictTruncated:
		return "TRUNCATED"
	case VerdictAmbiguous:
		return "AMBIGUOUS"
	}
	return fmt.Sprintf("Verdict(%d)", v)
}

// Role is a node's role. PreCandidate is a follower asking for pre-votes:
// for the spec it is still a Follower.
type Role uint8

// Roles.
const (
	RoleFollower Role = iota
	RolePreCandidate
	RoleCandidate
	RoleLeader
)

func (r Role) String() string {
	switch r {
	case RoleFollower:
		return "Follower"
	case RolePreCandidate:
		return "PreCandidate"
	case RoleCandidate:
		return "Candidate"
	case RoleLeader:
		return "Leader"
	}
	return fmt.Sprintf("Role(%d)", r)
}

// MessageType says what a Message is.
type MessageType uint8

// Message types. MsgVote, MsgVoteResp, MsgApp and MsgAppResp are raft.tla's
// four message types; the others are the production core's and have no
// spec counterpart (docs/refinement.md).
const (
	MsgVote        MessageType = iota + 1 // RequestVoteRequest
	MsgVoteResp                           // RequestVoteResponse
	MsgApp                                // AppendEntriesRequest (heartbeats included)
	MsgAppResp                            // AppendEntriesResponse
	MsgPreVote                            // pre-vote request, for the prospective term
	MsgPreVoteResp                        // pre-vote response
	MsgTimeoutNow                         // leadership transfer: campaign now
	// MsgAppRespPassive is the AppendEntries response of a member whose hard
	// state was lost (Boot.HardStateLost): the fields of MsgAppResp, for the
	// leader's flow control only. It counts toward no quorum (commit, read
	// round, check-quorum), raises no term, and is no spec message.
	MsgAppRespPassive
	// MsgSnap is InstallSnapshot: a leader offers a follower behind its
	// compaction point the snapshot at PrevLogIndex (of term PrevLogTerm),
	// with its commit index in LeaderCommit. The driver streams the
	// snapshot and hands the follower's core the message once it holds the
	// snapshot in full (StepSnapshot); it never reaches Step. A spec
	// message of the production actions (InstallSnapshotRequest).
	MsgSnap
	// MsgRepair and MsgRepairResp: a TRUNCATED member's request for a
	// peer's durable log, and the answer (repair.go; spec RepairRequest and
	// RepairResponse, with Config.PeerRepair only).
	MsgRepair
	MsgRepairResp
	// MsgFirstBoot, MsgFirstBootResp: the confirmation of a first boot
	// (firstboot.go): Seq is the asker's incarnation; the answer echoes it,
	// carries its own in Round and says yes in Granted. No spec messages:
	// they raise no term.
	MsgFirstBoot
	MsgFirstBootResp
	msgTypeEnd
)

var msgTypeNames = [...]string{
	MsgVote: "MsgVote", MsgVoteResp: "MsgVoteResp", MsgApp: "MsgApp", MsgAppResp: "MsgAppResp",
	MsgPreVote: "MsgPreVote", MsgPreVoteResp: "MsgPreVoteResp", MsgTimeoutNow: "MsgTimeoutNow",
	MsgAppRespPassive: "MsgAppRespPassive", MsgSnap: "MsgSnap", MsgRepair: "MsgRepair", MsgRepairResp: "MsgRepairResp",
	MsgFirstBoot: "MsgFirstBoot", MsgFirstBootResp: "MsgFirstBootResp",
}

func (t MessageType) String() string {
	if t > 0 && t < msgTypeEnd {
		return msgTypeNames[t]
	}
	return fmt.Sprintf("MessageType(%d)", t)
}

// isSpec reports whether messages of this type are raft.tla messages.
func (t MessageType) isSpec() bool { return (t >= MsgVote && t <= MsgAppResp) || t == MsgSnap }

// Message is what nodes exchange. Which fields a type carries is fixed
// (Validate refuses any other field set non-zero):
//
//	MsgVote, MsgPreVote        Term, LastLogIndex, LastLogTerm, Transfer (MsgVote only)
//	MsgVoteResp, MsgPreVoteResp Term, Granted, Ambiguous (with Granted only)
//	MsgApp                     Term, PrevLogIndex, PrevLogTerm, Entries, Commit, LeaderCommit, Round, Seq
//	MsgAppResp                 Term, Success, MatchIndex, HintIndex, HintTerm (rejections), Round, Seq
//	MsgAppRespPassive          as MsgAppResp
//	MsgTimeoutNow              Term
//	MsgSnap                    Term, PrevLogIndex, PrevLogTerm (the snapshot's last entry), LeaderCommit
//	MsgRepair                  Term, LastLogIndex, LastLogTerm (the requester's durable tip), PrevLogIndex (the probe)
//	MsgRepairResp              Term, LastLogIndex, LastLogTerm (the peer's durable tip), PrevLogIndex, PrevLogTerm, Entries
//
// From, To and Type are always set.
type Message struct {
	Type     MessageType
	From, To NodeID
	Term     uint64

	// MsgVote, MsgPreVote: the candidate's durable tip (spec mlastLogIndex,
	// mlastLogTerm). Term of MsgPreVote is the term the candidate would
	// campaign in.
	LastLogIndex, LastLogTerm uint64
	// Transfer marks the MsgVote of a leadership transfer: voters grant it
	// even while they hear from a leader.
	Transfer bool

	// MsgVoteResp, MsgPreVoteResp. Ambiguous (spec mambiguous): the grant
	// of an AMBIGUOUS voter, which counts only towards a unanimous election
	// (spec/power.go).
	Granted   bool
	Ambiguous bool

	// MsgApp. Commit is spec mcommitIndex (the leader's commit index clamped
	// to the last entry of the message); LeaderCommit is spec mleaderCommit
	// (unclamped).
	PrevLogIndex, PrevLogTerm uint64
	Entries                   []Entry
	Commit, LeaderCommit      uint64

	// MsgAppResp. MatchIndex is 0 on a rejection; the hint is the
	// follower's last index and its term, for fast back-off.
	Success             bool
	MatchIndex          uint64
	HintIndex, HintTerm uint64

	// MsgApp and MsgAppResp, echoed by the follower: the leader's read round
	// (ReadIndex confirmations) and the per-follower send sequence number
	// (to tell a stale rejection from a fresh one).
	Round, Seq uint64
}

func (m Message) String() string {
	head := fmt.Sprintf("%d->%d %v term=%d", m.From, m.To, m.Type, m.Term)
	switch m.Type {
	case MsgVote, MsgPreVote:
		s := fmt.Sprintf("%s last=%d/%d", head, m.LastLogTerm, m.LastLogIndex)
		if m.Transfer {
			s += " transfer"
		}
		return s
	case MsgVoteResp, MsgPreVoteResp:
		if m.Granted && m.Ambiguous {
			return head + " granted ambiguous"
		}
		if m.Granted {
			return head + " granted"
		}
		return head + " rejected"
	case MsgApp:
		s := fmt.Sprintf("%s prev=%d/%d commit=%d leaderCommit=%d", head, m.PrevLogTerm, m.PrevLogIndex, m.Commit, m.LeaderCommit)
		if len(m.Entries) > 0 {
			s += fmt.Sprintf(" entries=%d/%d..%d/%d", m.Entries[0].Term, m.Entries[0].Index,
				m.Entries[len(m.Entries)-1].Term, m.Entries[len(m.Entries)-1].Index)
		}
		return s
	case MsgAppResp, MsgAppRespPassive:
		if m.Success {
			return fmt.Sprintf("%s match=%d", head, m.MatchIndex)
		}
		return fmt.Sprintf("%s rejected hint=%d/%d", head, m.HintTerm, m.HintIndex)
	case MsgRepair:
		return fmt.Sprintf("%s last=%d/%d probe=%d", head, m.LastLogTerm, m.LastLogIndex, m.PrevLogIndex)
	case MsgRepairResp:
		s := fmt.Sprintf("%s last=%d/%d", head, m.LastLogTerm, m.LastLogIndex)
		if len(m.Entries) > 0 {
			s += fmt.Sprintf(" prev=%d/%d entries=%d/%d..%d/%d", m.PrevLogTerm, m.PrevLogIndex, m.Entries[0].Term, m.Entries[0].Index,
				m.Entries[len(m.Entries)-1].Term, m.Entries[len(m.Entries)-1].Index)
		}
		return s
	}
	return head
}

// ReadState answers a ReadIndex request: once the local state machine has
// applied Index, a read of it is linearizable.
type ReadState struct {
	Index   uint64
	Context []byte
}

// AlertKind classifies an operator-visible alert. Alerts repeat while their
// condition lasts: the node never exits, it says what is wrong. A lasting
// condition (a fence, a failed WAL, a lost hard state) is reported when it
// begins and every Config.AlertTicks; an event a peer or storage can repeat
// on every message (a read that fails, a message the protocol forbids) is
// reported at most once per AlertTicks per kind, and a summary alert of the
// kind says how many more were suppressed in that window (alerts.go).
type AlertKind uint8

// Alert kinds.
const (
	AlertFenced         AlertKind = iota + 1 // fenced from leadership, catching up
	AlertPermanentFence                      // fenced and no leader heard: the loud permanent fence
	AlertFenceReleased                       // the fence released
	AlertWALFailed                           // the WAL failed: acknowledging nothing, granting no vote
	AlertProtocol                            // a peer sent something the protocol forbids
	AlertStorage                             // storage returned something inconsistent
	AlertHardStateLost                       // the hard state was lost: no vote, no campaign, passive until replaced
	AlertFirstBoot                           // a first boot confirmed by the other voters (firstboot.go)
	alertKindEnd
)

var alertNames = map[AlertKind]string{
	AlertFenced: "FENCED", AlertPermanentFence: "PERMANENT-FENCE", AlertFenceReleased: "FENCE-RELEASED",
	AlertWALFailed: "WAL-FAILED", AlertProtocol: "PROTOCOL", AlertStorage: "STORAGE",
	AlertHardStateLost: "HARD-STATE-LOST",
	AlertFirstBoot:     "FIRST-BOOT",
}

func (k AlertKind) String() string {
	if s, ok := alertNames[k]; ok {
		return s
	}
	return fmt.Sprintf("AlertKind(%d)", k)
}

// Alert is one operator-visible report.
type Alert struct {
	Kind AlertKind
	Text string
}

func (a Alert) String() string { return a.Kind.String() + ": " + a.Text }

// Errors returned to callers.
var (
	ErrNotLeader        = errors.New("raft: not the leader")
	ErrWALFailed        = errors.New("raft: the WAL failed; the node acknowledges nothing until it restarts")
	ErrProposalTooLarge = errors.New("raft: proposal too large")
	ErrProposalDropped  = errors.New("raft: proposal dropped: too much uncommitted data")
	ErrTransferring     = errors.New("raft: leadership transfer in progress")
	ErrFenced           = errors.New("raft: fenced from leadership")
	ErrHardStateLost    = errors.New("raft: the hard state was lost; this member neither votes nor campaigns until an operator replaces it")
	ErrUnconfirmed      = errors.New("raft: first boot not yet confirmed by the other voters; this member neither votes nor campaigns until it is")
	ErrInvalidMessage   = errors.New("raft: invalid message")
	ErrCompacted        = errors.New("raft: entries compacted")
	ErrUnavailable      = errors.New("raft: entries unavailable")
)
