package replica

import (
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/durableraft/durableraft/impl/raft"
)

// ChunkKind says what a snapshot transfer message is.
type ChunkKind uint8

// The transfer messages (docs/snapshots.md, "The install protocol"). They
// travel as Message with Type raft.MsgSnap: PrevLogIndex and PrevLogTerm
// name the snapshot, Term is the sender's term, and LeaderCommit (data
// only) the leader's commit index; Chunk carries the rest.
const (
	// ChunkData: leader -> follower, bytes [Offset, Offset+len(Data)) of
	// the snapshot file of Size bytes; Sum is CRC-32C of Data.
	ChunkData ChunkKind = iota + 1
	// ChunkAck: follower -> leader, I hold bytes [0, Offset): send from
	// there (flow control, and a resume after a reconnect or a gap).
	ChunkAck
	// ChunkDone: follower -> leader, my core took the snapshot (installed
	// it and made the install durable, or held its last entry already).
	ChunkDone
	// ChunkRefuse: follower -> leader, the transfer cannot go on (Reason):
	// a stale term, a file that failed verification (Restart: I dropped
	// it, send it again from 0), no room.
	ChunkRefuse
	chunkKindEnd
)

var chunkKindNames = [...]string{ChunkData: "data", ChunkAck: "ack", ChunkDone: "done", ChunkRefuse: "refuse"}

func (k ChunkKind) String() string {
	if k > 0 && k < chunkKindEnd {
		return chunkKindNames[k]
	}
	return fmt.Sprintf("ChunkKind(%d)", uint8(k))
}

// SnapChunk is a snapshot transfer message's own part.
//
// Invariants (checkChunk, at ingress): Kind is known; Data only on
// ChunkData, with Offset+len(Data) <= Size and Sum its checksum; Reason at
// most ReasonBytesMax bytes, only on ChunkRefuse.
type SnapChunk struct {
	Kind         ChunkKind
	Offset, Size uint64
	Data         []byte
	Sum          uint32
	Restart      bool
	Reason       string
}

// ReasonBytesMax bounds a refusal's reason.
const ReasonBytesMax = 256

func chunkSum(data []byte) uint32 { return crc32.Checksum(data, snapCastagnoli) }

// checkChunk validates a transfer message before anything uses it: sender
// and recipient, the snapshot's name, the chunk's fields (the core's
// Validate does not see these messages).
func checkChunk(m *Message, self raft.NodeID, voters []raft.NodeID, chunkMax int, sizeMax uint64) error {
	c := m.Chunk
	switch {
	case c == nil || m.Type != raft.MsgSnap:
		return fmt.Errorf("%w: %v without a snapshot chunk", ErrChunk, m.Type)
	case m.To != self || m.From == self || m.From == raft.None || (voters != nil && !slices.Contains(voters, m.From)):
		return fmt.Errorf("%w: from %d to %d", ErrChunk, m.From, m.To)
	case m.Term < 1 || m.Term > raft.TermMax || m.PrevLogIndex < 1 || m.PrevLogIndex > raft.IndexMax ||
		m.PrevLogTerm < 1 || m.PrevLogTerm > m.Term:
		return fmt.Errorf("%w: snapshot %d/%d at term %d", ErrChunk, m.PrevLogTerm, m.PrevLogIndex, m.Term)
	case c.Kind < ChunkData || c.Kind >= chunkKindEnd:
		return fmt.Errorf("%w: kind %d", ErrChunk, c.Kind)
	case len(c.Reason) > ReasonBytesMax || (c.Reason != "" && c.Kind != ChunkRefuse) || (c.Restart && c.Kind != ChunkRefuse):
		return fmt.Errorf("%w: a reason of %d bytes on %v", ErrChunk, len(c.Reason), c.Kind)
	case c.Kind != ChunkData && (len(c.Data) != 0 || c.Sum != 0 || c.Size != 0):
		return fmt.Errorf("%w: data on %v", ErrChunk, c.Kind)
	case c.Kind != ChunkData && m.LeaderCommit != 0:
		return fmt.Errorf("%w: leader commit on %v", ErrChunk, c.Kind)
	case c.Kind != ChunkAck && c.Kind != ChunkData && c.Offset != 0:
		return fmt.Errorf("%w: offset on %v", ErrChunk, c.Kind)
	}
	if c.Kind != ChunkData {
		return nil
	}
	switch {
	case len(c.Data) == 0 || len(c.Data) > chunkMax:
		return fmt.Errorf("%w: %d bytes of data, at most %d", ErrChunk, len(c.Data), chunkMax)
	case c.Size > sizeMax || c.Offset > c.Size || uint64(len(c.Data)) > c.Size-c.Offset:
		return fmt.Errorf("%w: bytes [%d, %d) of %d (at most %d)", ErrChunk, c.Offset, c.Offset+uint64(len(c.Data)), c.Size, sizeMax)
	case m.LeaderCommit < m.PrevLogIndex || m.LeaderCommit > raft.IndexMax:
		return fmt.Errorf("%w: leader commit %d below the snapshot %d", ErrChunk, m.LeaderCommit, m.PrevLogIndex)
	case chunkSum(c.Data) != c.Sum:
		return fmt.Errorf("%w: bytes [%d, %d): checksum %08x, computed %08x", ErrChunk, c.Offset, c.Offset+uint64(len(c.Data)), c.Sum, chunkSum(c.Data))
	}
	return nil
}

// snapMessage is a transfer message of kind about snapshot (index, term).
func snapMessage(from, to raft.NodeID, term, index, snapTerm uint64, c SnapChunk) Message {
	return Message{Message: raft.Message{Type: raft.MsgSnap, From: from, To: to, Term: term, PrevLogIndex: index, PrevLogTerm: snapTerm},
		Chunk: &c}
}
