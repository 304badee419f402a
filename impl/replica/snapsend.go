package replica

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// The leader's side of a transfer: one sender per follower being sent a
// snapshot. It reads the file chunk by chunk on the replica's goroutine
// (a chunk is a header piece, one block frame, or the trailer: each
// verified as it is read), keeps at most WindowChunks chunks unacknowledged,
// resends from the follower's acknowledged offset when it hears nothing for
// ResendTicks, and gives up after AbortResends resends without progress.
// Nothing of it waits: heartbeats and the other followers' AppendEntries
// go on between any two chunks.

// sender is one transfer.
//
// Invariants: acked <= next <= size; the file is open until close.
type sender struct {
	to          raft.NodeID
	term        uint64 // the leader's term it sends in
	commit      uint64 // the leader's commit index, for the chunks' header
	meta        SnapshotMeta
	name        string
	f           vfs.File
	l           snapLayout
	hdr         []byte
	size        uint64
	next, acked uint64
	idle        int // ticks since the last acknowledgment
	resends     int // resends since the last progress
	restarts    int // restarts from 0 the follower asked for
}

func (sd *sender) close() {
	if sd.f != nil {
		_ = sd.f.Close()
		sd.f = nil
	}
}

// frameBytes is one block's frame: the window's unit.
func (sd *sender) frameBytes() uint64 { return uint64(snapFrameBytes + sd.l.blockBytes) }

// chunkAt is the chunk holding offset off: [lo, hi).
func (sd *sender) chunkAt(off uint64, chunkBytes int) (lo, hi uint64) {
	hb, trailer := uint64(sd.l.headerBytes), sd.size-snapTrailerBytes
	switch {
	case off < hb:
		lo = off - off%uint64(chunkBytes)
		return lo, min(lo+uint64(chunkBytes), hb)
	case off < trailer:
		k := (off - hb) / sd.frameBytes()
		lo = uint64(sd.l.blockOffset(k))
		return lo, lo + uint64(snapFrameBytes+sd.l.blockLen(k))
	}
	return trailer, sd.size
}

// read reads chunk [lo, hi) and verifies it: a block against its checksum,
// the trailer against the one verified when the transfer started.
func (sd *sender) read(lo, hi uint64) ([]byte, error) {
	if hi <= uint64(sd.l.headerBytes) {
		return bytes.Clone(sd.hdr[lo:hi]), nil
	}
	b := make([]byte, hi-lo)
	if err := readFull(sd.f, b, int64(lo)); err != nil {
		return nil, err
	}
	if hi == sd.size {
		if !bytes.Equal(b, sd.l.trailer.encode()) {
			return nil, fmt.Errorf("%w: the trailer changed on disk", ErrSnapshotCorrupt)
		}
		return b, nil
	}
	k := (lo - uint64(sd.l.headerBytes)) / sd.frameBytes()
	if got, want := blockSum(k, b[snapFrameBytes:]), binary.LittleEndian.Uint32(b); got != want {
		return nil, fmt.Errorf("%w: block %d (offset %d): checksum %08x, computed %08x", ErrSnapshotCorrupt, k, lo, want, got)
	}
	return b, nil
}

// startSend begins (or goes on with) streaming the snapshot a core MsgSnap
// names to its recipient. A snapshot the runtime no longer holds, or a file
// that does not verify, fails the transfer at once (the core asks again,
// for the newest snapshot, at its probe's cadence).
func (r *Replica) startSend(m *raft.Message) {
	s := r.snaps
	info := raft.SnapshotInfo{Index: m.PrevLogIndex, Term: m.PrevLogTerm}
	if s == nil {
		r.node.ReportSnapshot(m.To, info.Index, false)
		return
	}
	if sd := s.senders[m.To]; sd != nil {
		if sd.meta.info() == info && sd.term == m.Term {
			sd.commit = max(sd.commit, m.LeaderCommit)
			r.pump(sd)
			return
		}
		sd.close()
		delete(s.senders, m.To)
	}
	if s.cur.info() != info || s.curName == "" {
		r.node.ReportSnapshot(m.To, info.Index, false)
		return
	}
	sd, err := r.openSender(m, s.curName)
	if err != nil {
		r.ownSnapshotDamaged(s.curName, err)
		r.node.ReportSnapshot(m.To, info.Index, false)
		return
	}
	s.senders[m.To] = sd
	s.stats.TransfersStarted++
	r.log.Info("replica: sending a snapshot", "to", uint64(m.To), "index", info.Index, "term", info.Term, "bytes", sd.size)
	r.pump(sd)
}

func (r *Replica) openSender(m *raft.Message, name string) (*sender, error) {
	s := r.snaps
	f, err := s.store.fs.Open(s.store.path(name))
	if err != nil {
		return nil, err
	}
	meta, l, err := openSnap(f)
	if err == nil && (meta.Index != m.PrevLogIndex || meta.Term != m.PrevLogTerm) {
		err = fmt.Errorf("%w: %s holds %d/%d", ErrSnapshotCorrupt, name, meta.Term, meta.Index)
	}
	var hdr []byte
	if err == nil {
		hdr = make([]byte, l.headerBytes)
		err = readFull(f, hdr, 0)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &sender{to: m.To, term: m.Term, commit: m.LeaderCommit, meta: meta, name: name, f: f, l: l, hdr: hdr,
		size: uint64(l.size())}, nil
}

// pump sends chunks while the window has room.
func (r *Replica) pump(sd *sender) {
	s := r.snaps
	var out []Message
	window := uint64(s.opts.WindowChunks) * max(sd.frameBytes(), uint64(s.opts.ChunkBytes))
	for sd.next < sd.size && sd.next-sd.acked < window {
		lo, hi := sd.chunkAt(sd.next, s.opts.ChunkBytes)
		data, err := sd.read(lo, hi)
		if err != nil {
			r.send(out)
			r.ownSnapshotDamaged(sd.name, err)
			return
		}
		msg := snapMessage(r.id, sd.to, sd.term, sd.meta.Index, sd.meta.Term,
			SnapChunk{Kind: ChunkData, Offset: lo, Size: sd.size, Data: data, Sum: chunkSum(data)})
		msg.LeaderCommit = sd.commit
		out = append(out, msg)
		sd.next = hi
		s.stats.ChunksSent++
		s.stats.BytesSent += uint64(len(data))
	}
	r.send(out)
}

// tickSender: resend from the acknowledged offset after ResendTicks of
// silence; give up after AbortResends resends without progress.
func (r *Replica) tickSender(sd *sender) {
	s := r.snaps
	if sd.idle++; sd.idle < s.opts.ResendTicks {
		return
	}
	sd.idle = 0
	if sd.resends++; sd.resends > s.opts.AbortResends {
		r.endSend(sd, false, "no acknowledgment")
		return
	}
	s.stats.Resends++
	sd.next = sd.acked
	r.pump(sd)
}

// endSend ends a transfer and tells the core how it went.
func (r *Replica) endSend(sd *sender, delivered bool, why string) {
	s := r.snaps
	sd.close()
	delete(s.senders, sd.to)
	if delivered {
		s.stats.TransfersDone++
		r.log.Info("replica: snapshot delivered", "to", uint64(sd.to), "index", sd.meta.Index)
	} else {
		s.stats.TransfersFailed++
		r.alert.log(r.log, "snapshot-send", "replica: snapshot transfer failed", "to", uint64(sd.to), "index", sd.meta.Index, "why", why)
	}
	if role, term, _ := r.Leadership(); role == raft.RoleLeader && term == sd.term {
		r.node.ReportSnapshot(sd.to, sd.meta.Index, delivered)
	}
}

// senderReply takes a follower's answer to a transfer.
func (r *Replica) senderReply(m *Message) {
	s := r.snaps
	sd := s.senders[m.From]
	if sd == nil || sd.meta.Index != m.PrevLogIndex || sd.meta.Term != m.PrevLogTerm {
		return // a transfer that ended
	}
	if m.Term > sd.term {
		r.endSend(sd, false, "the follower is in a newer term")
		return
	}
	c := m.Chunk
	switch c.Kind {
	case ChunkAck:
		if c.Offset > sd.size {
			s.stats.ChunksRefused++
			return
		}
		if c.Offset > sd.acked {
			sd.resends = 0
		}
		if c.Offset < sd.acked || c.Offset > sd.next {
			sd.next = c.Offset // the follower lost what it had, or holds more than was sent in this life
		}
		sd.acked, sd.idle = c.Offset, 0
		r.pump(sd)
	case ChunkDone:
		r.endSend(sd, true, "")
	case ChunkRefuse:
		if c.Restart && sd.restarts < 3 {
			sd.restarts++
			s.stats.TransferRestarts++
			r.log.Warn("replica: the follower refused the snapshot and asks for it again", "to", uint64(sd.to), "reason", c.Reason)
			sd.acked, sd.next, sd.idle = 0, 0, 0
			r.pump(sd)
			return
		}
		r.endSend(sd, false, "refused: "+c.Reason)
	}
}

// ownSnapshotDamaged: this node's own snapshot file failed verification
// as it was read. It is quarantined and never sent; every transfer of it
// fails; a fresh snapshot is made at once (the state machine is intact).
func (r *Replica) ownSnapshotDamaged(name string, err error) {
	s := r.snaps
	s.stats.Quarantined++
	r.log.Error("replica: MY SNAPSHOT FILE FAILED VERIFICATION: quarantined, never sent; making a new one", "file", name, "err", err)
	for _, sd := range s.senders {
		if sd.name == name {
			r.endSend(sd, false, "the snapshot file failed verification")
		}
	}
	if qerr := s.store.quarantine(name); qerr != nil {
		r.log.Error("replica: quarantining a damaged snapshot", "file", name, "err", qerr)
	}
	if name == s.curName {
		s.curName = ""
		s.needFresh = true
	}
}

// dropSenders ends every transfer (leadership lost): the new leader, or
// this one in a new term, starts its own.
func (r *Replica) dropSenders() {
	if r.snaps == nil {
		return
	}
	for to, sd := range r.snaps.senders {
		sd.close()
		delete(r.snaps.senders, to)
	}
}
