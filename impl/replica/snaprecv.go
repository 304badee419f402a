package replica

import (
	"fmt"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// The follower's side of a transfer: chunks are written at their offsets
// into part-<index>-<term>.tmp as they come (nothing of a snapshot is held
// in memory but the chunk at hand), acknowledged with the contiguous
// length held, so that a sender that lost chunks, or reconnected, goes on
// from there. Once the file is whole, a verify job reads it back, checks
// every part and fdatasyncs it, then renames it recv-…; only then does the
// core see the snapshot (StepSnapshot). A file that fails verification is
// removed and asked for again from 0; nothing of it is applied.

// receiverKey names a transfer: the leader it comes from and the snapshot.
type receiverKey struct {
	from        raft.NodeID
	index, term uint64
}

// receiver is the transfer in progress.
//
// Invariants: have <= size; f is open exactly while receiving (not
// verifying); verifying until the verify job is back.
type receiver struct {
	key        receiverKey
	leaderTerm uint64
	commit     uint64
	size, have uint64
	f          vfs.File
	name       string
	verifying  bool
	idle       int // ticks since its last chunk (tickSnapshots)
}

func (rv *receiver) close() {
	if rv.f != nil {
		_ = rv.f.Close()
		rv.f = nil
	}
}

func (s *snapRuntime) recvFrom() raft.NodeID {
	if s.recv == nil {
		return raft.None
	}
	return s.recv.key.from
}

// doneMessage is the answer that tells the leader its core may go on.
func (s *snapRuntime) doneMessage(self raft.NodeID) (Message, bool) {
	if s.recv == nil {
		return Message{}, false
	}
	k := s.recv.key
	return snapMessage(self, k.from, s.recv.leaderTerm, k.index, k.term, SnapChunk{Kind: ChunkDone}), true
}

// snapReply sends a transfer answer about m's snapshot to its sender.
func (r *Replica) snapReply(m *Message, c SnapChunk) {
	term := max(r.term, 1)
	r.send([]Message{snapMessage(r.id, m.From, term, m.PrevLogIndex, m.PrevLogTerm, c)})
}

// handleSnapMessage takes a transfer message: a chunk for this follower,
// or an answer for one of this leader's senders.
func (r *Replica) handleSnapMessage(m *Message) {
	s := r.snaps
	if s == nil {
		if m.Chunk != nil && m.Chunk.Kind == ChunkData {
			r.snapReply(m, SnapChunk{Kind: ChunkRefuse, Reason: "snapshots are off on this node"})
		}
		return
	}
	if err := checkChunk(m, r.id, nil, max(s.opts.ChunkBytes, snapFrameBytes+s.opts.ChunkBytes), s.opts.SizeMax); err != nil {
		s.stats.ChunksRefused++
		r.stats.MessagesInvalid.Add(1)
		r.alert.log(r.log, "chunk", "replica: snapshot message refused", "from", uint64(m.From), "err", err)
		return
	}
	if m.Chunk.Kind == ChunkData {
		r.recvChunk(m)
		return
	}
	r.senderReply(m)
}

// recvChunk writes a chunk of the snapshot a leader streams.
func (r *Replica) recvChunk(m *Message) {
	s, c := r.snaps, m.Chunk
	if m.Term < r.term {
		r.snapReply(m, SnapChunk{Kind: ChunkRefuse, Reason: "stale term"})
		return
	}
	key := receiverKey{from: m.From, index: m.PrevLogIndex, term: m.PrevLogTerm}
	if rv := s.recv; rv != nil && (rv.key != key || rv.size != c.Size) {
		if rv.verifying || s.installName != "" {
			return // busy with the last one: the sender resends later
		}
		// Two peers answering a repair request both stream (repair.go): a
		// transfer in progress from another sender in the same term keeps
		// on until it stalls, else each one's chunk would restart the other
		// for ever. A newer term's sender (a new leader) takes over.
		if rv.key.from != key.from && m.Term <= rv.leaderTerm && rv.idle < 2*s.opts.ResendTicks {
			s.stats.ChunksRefused++
			r.snapReply(m, SnapChunk{Kind: ChunkRefuse, Reason: fmt.Sprintf("busy receiving a snapshot from %d", rv.key.from)})
			return
		}
		r.dropReceiver()
	}
	if s.recv == nil && !r.newReceiver(m, key) {
		return
	}
	rv := s.recv
	// The core steps the offer as the leader made it: its term with a
	// commit index it sent in that term (a commit index of an older term
	// may exceed the newer term's after a restart of the leader).
	switch {
	case m.Term > rv.leaderTerm:
		rv.leaderTerm, rv.commit = m.Term, m.LeaderCommit
	case m.Term == rv.leaderTerm:
		rv.commit = max(rv.commit, m.LeaderCommit)
	}
	s.stats.ChunksReceived++
	rv.idle = 0
	end := c.Offset + uint64(len(c.Data))
	switch {
	case rv.verifying:
		return // whole already; the done (or refusal) follows verification
	case c.Offset > rv.have || end <= rv.have:
		r.snapReply(m, SnapChunk{Kind: ChunkAck, Offset: rv.have}) // a gap or a duplicate: send from what I hold
		return
	}
	data := c.Data[rv.have-c.Offset:]
	if _, err := rv.f.WriteAt(data, int64(rv.have)); err != nil {
		r.log.Error("replica: cannot store a snapshot chunk; the transfer restarts", "file", rv.name, "err", err)
		r.dropReceiver()
		r.snapReply(m, SnapChunk{Kind: ChunkRefuse, Reason: "cannot store: " + truncateReason(err.Error())})
		return
	}
	rv.have = end
	s.stats.BytesReceived += uint64(len(data))
	if rv.have == rv.size {
		rv.close()
		rv.verifying, s.verifying = true, true
		s.jobs = append(s.jobs, newVerifyJob(s.store, key.index, key.term, key))
	}
	r.snapReply(m, SnapChunk{Kind: ChunkAck, Offset: rv.have})
}

func truncateReason(s string) string {
	if len(s) > ReasonBytesMax {
		return s[:ReasonBytesMax]
	}
	return s
}

// newReceiver starts receiving a snapshot into a fresh part file.
func (r *Replica) newReceiver(m *Message, key receiverKey) bool {
	s := r.snaps
	name := snapName(snapKindPart, key.index, key.term)
	f, err := s.store.fs.Create(s.store.path(name))
	if err != nil {
		r.log.Error("replica: cannot create a file for a snapshot", "file", name, "err", err)
		r.snapReply(m, SnapChunk{Kind: ChunkRefuse, Reason: "cannot store: " + truncateReason(err.Error())})
		return false
	}
	s.recv = &receiver{key: key, size: m.Chunk.Size, f: f, name: name}
	r.log.Info("replica: receiving a snapshot", "from", uint64(key.from), "index", key.index, "term", key.term, "bytes", m.Chunk.Size)
	return true
}

// dropReceiver abandons the transfer in progress and removes its file.
func (r *Replica) dropReceiver() {
	s := r.snaps
	rv := s.recv
	if rv == nil {
		return
	}
	rv.close()
	_ = s.store.remove(rv.name)
	s.recv = nil
}

// snapshotVerified takes a verify job back: a verified snapshot goes to
// the core; one that failed is removed and asked for again.
func (r *Replica) snapshotVerified(j *Job) {
	s := r.snaps
	rv := s.recv
	if rv == nil || rv.key != j.from {
		if j.Err() == nil {
			_ = s.store.remove(j.name)
		}
		return
	}
	m := snapMessage(rv.key.from, r.id, rv.leaderTerm, rv.key.index, rv.key.term, SnapChunk{})
	if err := j.Err(); err != nil {
		s.stats.VerifyFailed++
		r.log.Error("replica: A RECEIVED SNAPSHOT FAILED VERIFICATION: nothing applied from it; fetching it again",
			"from", uint64(rv.key.from), "index", rv.key.index, "term", rv.key.term, "err", err)
		_ = s.store.remove(rv.name, j.name)
		s.recv = nil
		r.snapReply(&m, SnapChunk{Kind: ChunkRefuse, Restart: true, Reason: truncateReason("verification failed: " + err.Error())})
		return
	}
	core := raft.Message{Type: raft.MsgSnap, From: rv.key.from, To: r.id, Term: rv.leaderTerm,
		PrevLogIndex: rv.key.index, PrevLogTerm: rv.key.term, LeaderCommit: rv.commit}
	if c := j.meta.Membership; c != nil {
		// The configuration the snapshot records (raft.Node.StepSnapshot).
		core.Entries = []raft.Entry{{Index: rv.key.index, Term: rv.key.term, Data: raft.EncodeMembership(*c)}}
	}
	s.installName, s.installMeta = j.name, j.meta
	installed, err := r.node.StepSnapshot(core, j.meta.TracePrefix)
	if err != nil || !installed {
		s.installName = ""
		_ = s.store.remove(j.name)
		s.recv = nil
		if err != nil {
			r.alert.log(r.log, "snapshot-step", "replica: the core refused a received snapshot", "from", uint64(core.From), "err", err)
			r.snapReply(&m, SnapChunk{Kind: ChunkRefuse, Reason: truncateReason(err.Error())})
			return
		}
		r.snapReply(&m, SnapChunk{Kind: ChunkDone}) // the log holds it already: the leader goes on from it
		return
	}
	// Installed: processReady restores the state machine and resets the WAL
	// (Ready.Snapshot); the leader hears done once the reset is durable.
}
