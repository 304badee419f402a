package replica

import (
	"errors"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
)

// EventKind says what an Event is.
type EventKind uint8

// The inputs of a replica. Every one of them enters through Handle, in both
// ways of running it (Run in production, a simulator in stepped mode).
const (
	// EventMessage: a message from a peer (Event.Msg).
	EventMessage EventKind = iota + 1
	// EventTick: one tick of the protocol clock (Config.TickInterval in
	// production; the simulator's virtual clock in stepped mode).
	EventTick
	// EventPropose: client proposals (Event.Proposals), one log entry each.
	EventPropose
	// EventRead: linearizable reads (Event.Reads), batched by ReadIndex.
	EventRead
	// EventWAL: the WAL made progress (Event.Progress: a snapshot taken when
	// a WAL step completed, possibly older than the replica's last
	// submission: the runtime and the core must treat it as such).
	EventWAL
	// EventTransfer: transfer leadership to Event.To.
	EventTransfer
	// EventCampaign: campaign now (an operator's or a test's request).
	EventCampaign
	// EventFenceState: the cross-replica state check found this member's
	// state different from a majority's (Event.Reason): fence it from
	// voting and campaigning until restarted (raft.Node.FenceStateDiverged).
	EventFenceState
	// EventJob: a job the replica handed out (TakeJob) is back, done or
	// failed (Event.Job).
	EventJob
	// EventChangeConfig: a single-server membership change (Event.Change),
	// answered once its configuration entry is applied (membership.go).
	EventChangeConfig
)

var eventKindNames = [...]string{
	EventMessage: "message", EventTick: "tick", EventPropose: "propose", EventRead: "read",
	EventWAL: "wal", EventTransfer: "transfer", EventCampaign: "campaign", EventFenceState: "fence-state", EventJob: "job",
	EventChangeConfig: "change-config",
}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return "EventKind(?)"
}

// Event is one input of a replica.
type Event struct {
	Kind      EventKind
	Msg       Message
	Proposals []Proposal
	Reads     []Read
	Progress  wal.Progress
	To        raft.NodeID
	Reason    string // EventFenceState
	Job       *Job
	Change    *ChangeRequest // EventChangeConfig
}

// Proposal is one client write: Data becomes one log entry. Done is called
// exactly once, on the replica's goroutine (inside Handle), and must not
// block: with the entry's result once it is applied, or with an error.
type Proposal struct {
	Data []byte
	Done func(Result)
	// At is when the client's request arrived, for the append stage's
	// latency (Config.ObserveStage); zero: when it reached the replica.
	At time.Time
}

// Result is the outcome of a Proposal. Err is nil when the entry was
// committed and applied: Value is then what the state machine returned.
//
// Errors are definite or not, and say so (Definite): ErrNotLeader,
// ErrFenced, ErrTooLarge, ErrBusy and ErrWAL before the entry reached the
// log mean it was never appended; ErrLost means the entry was replaced by
// another one at its index, so it can never commit. A proposal with no
// answer yet (a leader change, a partition) stays pending: callers time out
// and report the outcome as unknown.
type Result struct {
	Index, Term uint64
	Value       []byte
	Err         error
}

// Read is one linearizable read. Done is called exactly once, on the
// replica's goroutine, and must not block: with the read index once the
// state machine has applied it (the caller reads the state machine inside
// Done, where its state is exactly that of Applied), or with an error.
type Read struct {
	Done func(ReadResult)
}

// ReadResult answers a Read: at Applied the state machine reflects every
// write acknowledged before the read was asked.
type ReadResult struct {
	Index, Applied uint64
	Err            error
}

// Errors a replica returns to callers.
var (
	// ErrNotLeader: this replica does not lead; Status().Lead names the
	// leader it knows of (None when it knows of none). Definite.
	ErrNotLeader = errors.New("replica: not the leader")
	// ErrFenced: the member is fenced (TRUNCATED, behind, or its hard state
	// was lost) and refuses to lead. Definite.
	ErrFenced = errors.New("replica: fenced")
	// ErrTooLarge: the proposal exceeds the entry size limit. Definite.
	ErrTooLarge = errors.New("replica: proposal too large")
	// ErrBusy: too much data proposed and not yet committed, or a leadership
	// transfer in progress. Definite; retry later.
	ErrBusy = errors.New("replica: busy")
	// ErrWAL: the WAL failed; the replica acknowledges nothing until it
	// restarts. Definite for proposals refused with it.
	ErrWAL = errors.New("replica: the WAL failed")
	// ErrLost: the entry was replaced at its index by a later leader's: it
	// was never committed and never will be. Definite.
	ErrLost = errors.New("replica: entry lost to a leader change")
	// ErrLeaderChanged: a read's confirmation round ended with the
	// leadership (nothing was read). Definite for reads.
	ErrLeaderChanged = errors.New("replica: leadership changed during the read")
	// ErrClosed: the replica stopped.
	ErrClosed = errors.New("replica: closed")
)

// Definite reports whether err says for certain that the write was not and
// will not be applied.
func Definite(err error) bool {
	for _, e := range []error{ErrNotLeader, ErrFenced, ErrTooLarge, ErrBusy, ErrWAL, ErrLost, ErrChangeRefused} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// proposeError maps the core's refusal of a proposal to the replica's.
func proposeError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrProposalTooLarge):
		return ErrTooLarge
	case errors.Is(err, raft.ErrProposalDropped), errors.Is(err, raft.ErrTransferring):
		return ErrBusy
	case errors.Is(err, raft.ErrWALFailed):
		return ErrWAL
	case errors.Is(err, raft.ErrFenced):
		return ErrFenced
	}
	return err
}
