package spec

import "fmt"

// Action names a TLA+ action. The names are the TLA+ operator names; the
// message handlers under Receive are named individually so that a trace
// says which one ran.
type Action uint8

// Actions of raft.tla, then those the durable profile adds.
const (
	ActRestart Action = iota + 1
	ActTimeout
	ActRequestVote
	ActBecomeLeader
	ActClientRequest
	ActAdvanceCommitIndex
	ActAppendEntries
	ActUpdateTerm
	ActHandleRequestVoteRequest
	ActHandleRequestVoteResponse
	ActHandleAppendEntriesRequest
	ActHandleAppendEntriesResponse
	ActDropStaleResponse
	ActDuplicateMessage
	ActDropMessage
	ActFlush
	ActCrash
	ActCorrupt
	// The production actions (production.go), taken only with
	// Config.Production.
	ActSendAppendEntries
	ActHandleAppendEntriesBatch
	ActHandleAppendEntriesResponseMax
	ActFlushTo
	ActStepDown
	ActPersist
	// Snapshots (snapshot.go), production actions too.
	ActSendSnapshot
	ActInstallSnapshot
	ActCrashFromSnapshot
	ActCorruptFromSnapshot
	// An environment action (badcommit.go), taken only with
	// Config.BadCommits > 0.
	ActCorruptLeaderCommit
	// Membership (membership.go), only with Config.Membership.
	ActChangeConfig
	// Power losses (power.go), only with Config.PowerLosses > 0.
	ActPowerLoss
	// Repair from peers (repair.go), only with Config.Repair.
	ActRequestRepair
	ActHandleRepairRequest
	ActHandleRepairResponse
	// PowerLoss of a member that restarts from a snapshot (the production
	// profile: power_production.go), with the commit index back as the
	// snapshot's, as CrashFromSnapshot.
	ActPowerLossFromSnapshot
	// Wipes (wipe.go), only with Config.Wipes > 0.
	ActWipe
	ActAnswerFirstBoot
	ActConfirmFirstBoot
	// The repair answered with a snapshot (repairsnap.go), only with
	// Config.Repair and Config.Production.
	ActSendRepairSnapshot
	actionEnd
)

var actionNames = [...]string{
	ActRestart:                     "Restart",
	ActTimeout:                     "Timeout",
	ActRequestVote:                 "RequestVote",
	ActBecomeLeader:                "BecomeLeader",
	ActClientRequest:               "ClientRequest",
	ActAdvanceCommitIndex:          "AdvanceCommitIndex",
	ActAppendEntries:               "AppendEntries",
	ActUpdateTerm:                  "UpdateTerm",
	ActHandleRequestVoteRequest:    "HandleRequestVoteRequest",
	ActHandleRequestVoteResponse:   "HandleRequestVoteResponse",
	ActHandleAppendEntriesRequest:  "HandleAppendEntriesRequest",
	ActHandleAppendEntriesResponse: "HandleAppendEntriesResponse",
	ActDropStaleResponse:           "DropStaleResponse",
	ActDuplicateMessage:            "DuplicateMessage",
	ActDropMessage:                 "DropMessage",
	ActFlush:                       "Flush",
	ActCrash:                       "Crash",
	ActCorrupt:                     "Corrupt",

	ActSendAppendEntries:              "SendAppendEntries",
	ActHandleAppendEntriesBatch:       "HandleAppendEntriesBatch",
	ActHandleAppendEntriesResponseMax: "HandleAppendEntriesResponseMax",
	ActFlushTo:                        "FlushTo",
	ActStepDown:                       "StepDown",
	ActPersist:                        "Persist",
	ActSendSnapshot:                   "SendSnapshot",
	ActInstallSnapshot:                "InstallSnapshot",
	ActCrashFromSnapshot:              "CrashFromSnapshot",
	ActCorruptFromSnapshot:            "CorruptFromSnapshot",
	ActCorruptLeaderCommit:            "CorruptLeaderCommit",
	ActChangeConfig:                   "ChangeConfig",
	ActPowerLoss:                      "PowerLoss",
	ActRequestRepair:                  "RequestRepair",
	ActHandleRepairRequest:            "HandleRepairRequest",
	ActHandleRepairResponse:           "HandleRepairResponse",
	ActPowerLossFromSnapshot:          "PowerLossFromSnapshot",
	ActWipe:                           "Wipe",
	ActAnswerFirstBoot:                "AnswerFirstBoot",
	ActConfirmFirstBoot:               "ConfirmFirstBoot",
	ActSendRepairSnapshot:             "SendRepairSnapshot",
}

func (a Action) String() string {
	if a > 0 && a < actionEnd {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", a)
}

// ParseAction maps a TLA+ action name to its Action.
func ParseAction(name string) (Action, bool) {
	for a := Action(1); a < actionEnd; a++ {
		if actionNames[a] == name {
			return a, true
		}
	}
	return 0, false
}

// ReceivesMessage reports whether the action consumes or copies a message of
// the bag (the handlers under Receive, DuplicateMessage, DropMessage).
func (a Action) ReceivesMessage() bool {
	return a >= ActUpdateTerm && a <= ActDropMessage || a.productionReceives() ||
		a == ActHandleRepairRequest || a == ActHandleRepairResponse || a == ActSendRepairSnapshot
}

// Branch says which disjunct of HandleAppendEntriesRequest ran.
type Branch uint8

// Branches of HandleAppendEntriesRequest.
const (
	BranchNone Branch = iota
	BranchReject
	BranchReturnToFollower
	BranchAlreadyDone
	BranchConflict
	BranchAppend
	BranchDurablePrefix
	branchEnd
)

var branchNames = [...]string{
	BranchNone:             "",
	BranchReject:           "reject",
	BranchReturnToFollower: "return-to-follower",
	BranchAlreadyDone:      "already-done",
	BranchConflict:         "conflict",
	BranchAppend:           "append",
	BranchDurablePrefix:    "durable-prefix",
}

func (b Branch) String() string {
	if b < branchEnd {
		return branchNames[b]
	}
	return fmt.Sprintf("Branch(%d)", b)
}

// ParseBranch is the inverse of Branch.String.
func ParseBranch(s string) (Branch, bool) {
	for b := BranchNone; b < branchEnd; b++ {
		if branchNames[b] == s {
			return b, true
		}
	}
	return 0, false
}

// LabelOf identifies one step: the action, its parameters, and the
// nondeterministic choices it made. For the message actions, I is the
// recipient (m.mdest) and J the sender (m.msource), as in Receive.
type LabelOf[T Int, L Seq[T, L]] struct {
	Action Action
	I, J   ServerID
	Value  uint8           // ClientRequest's v; ChangeConfig's configuration value (J: the server changed)
	Cut    T               // Crash, Corrupt and PowerLoss: the length log[i] keeps; FlushTo: the new durableLen; SendRepairSnapshot: the snapshot's index
	Msg    MessageOf[T, L] // the message of a message action
	Branch Branch          // HandleAppendEntriesRequest's disjunct
}

// Label is the explorer's step label.
type Label = LabelOf[uint8, Log]

func (l LabelOf[T, L]) String() string {
	switch {
	case l.Action == ActClientRequest:
		return fmt.Sprintf("%v(%v, v%d)", l.Action, l.I, l.Value)
	case l.Action == ActChangeConfig:
		return fmt.Sprintf("%v(%v, %v) to %v", l.Action, l.I, l.J, DecodeConfig(l.Value))
	case l.Action == ActCrash || l.Action == ActCorrupt || l.Action == ActCrashFromSnapshot || l.Action == ActCorruptFromSnapshot ||
		l.Action == ActPowerLoss || l.Action == ActPowerLossFromSnapshot:
		return fmt.Sprintf("%v(%v) keeps %d", l.Action, l.I, l.Cut)
	case l.Action == ActRequestVote || l.Action == ActAppendEntries || l.Action == ActSendSnapshot || l.Action == ActRequestRepair:
		return fmt.Sprintf("%v(%v, %v)", l.Action, l.I, l.J)
	case l.Action == ActCorruptLeaderCommit:
		return fmt.Sprintf("%v %v to %d", l.Action, l.Msg, l.Cut)
	case l.Action == ActSendRepairSnapshot:
		return fmt.Sprintf("%v %v up to %d", l.Action, l.Msg, l.Cut)
	case l.Action.ReceivesMessage():
		if l.Branch != BranchNone {
			return fmt.Sprintf("%v[%v] %v", l.Action, l.Branch, l.Msg)
		}
		return fmt.Sprintf("%v %v", l.Action, l.Msg)
	}
	return fmt.Sprintf("%v(%v)", l.Action, l.I)
}

// EmitOf receives one successor state and the step that produced it. The
// state is passed by value so that generating it allocates nothing; a
// callee that keeps it copies it (its slices are immutable and may be
// shared).
type EmitOf[T Int, L Seq[T, L], V Voters[L, V]] func(succ StateOf[T, L, V], l LabelOf[T, L])

// Emit is the explorer's successor callback.
type Emit = EmitOf[uint8, Log, VoterLog]
