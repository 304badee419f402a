package replica

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
)

// Message is what replicas exchange: a core message and, for an
// AppendEntries, the WAL records of its entries byte for byte (seeds 002
// and 004: the bytes of an entry's record in the leader's WAL are the bytes
// on the wire and on the follower's disk, checksum and parent-hash chain
// included).
//
// Invariants, for Type = MsgApp, checked at ingress (verifyApp):
//   - len(Records) = len(Entries), and record k decodes to entry k;
//   - record 0 chains to PrevChecksum, record k to record k-1's checksum;
//   - PrevChecksum is the sender's chain value at PrevLogIndex.
//
// A snapshot transfer message (Type = MsgSnap) carries Chunk instead
// (snapmsg.go); it never reaches the core as it is.
type Message struct {
	raft.Message
	Records      []wal.Record
	PrevChecksum uint32
	Chunk        *SnapChunk
}

// Ingress refusals, counted in Stats and reported (rate-limited) in the log.
var (
	// ErrRecord: a shipped record does not verify (checksum, framing) or
	// does not match the entry it carries.
	ErrRecord = errors.New("replica: shipped record does not verify")
	// ErrChain: the records' hash chain does not link to this replica's log
	// at an index where the terms agree: the histories differ although the
	// protocol says they are equal.
	ErrChain = errors.New("replica: hash chain mismatch")
	// ErrChunk: a snapshot transfer message does not verify.
	ErrChunk = errors.New("replica: bad snapshot chunk")
)

// stamp fills an outgoing AppendEntries, or a repair answer (MsgRepairResp:
// entries of this replica's durable log), with the WAL's records of its
// entries and the chain value at PrevLogIndex. Every entry of a Ready's
// messages is in the WAL by now (processReady appends before it sends).
func (r *Replica) stamp(m *raft.Message, last *stamped) (Message, error) {
	out := Message{Message: *m}
	if m.Type != raft.MsgApp && (m.Type != raft.MsgRepairResp || len(m.Entries) == 0) {
		return out, nil
	}
	sum, err := r.w.Checksum(m.PrevLogIndex)
	if err != nil {
		return out, fmt.Errorf("chain value at %d: %w", m.PrevLogIndex, err)
	}
	out.PrevChecksum = sum
	if len(m.Entries) == 0 {
		return out, nil
	}
	lo, n := m.Entries[0].Index, len(m.Entries)
	if last.recs != nil && last.lo == lo && len(last.recs) == n {
		out.Records = last.recs // the same range to another follower: the records are immutable
		return out, nil
	}
	recs, err := r.w.Records(lo, lo+uint64(n), math.MaxUint64)
	if err != nil {
		return out, fmt.Errorf("records [%d, %d): %w", lo, lo+uint64(n), err)
	}
	if len(recs) != n {
		return out, fmt.Errorf("records [%d, %d): got %d", lo, lo+uint64(n), len(recs))
	}
	out.Records = recs
	*last = stamped{lo: lo, recs: recs}
	return out, nil
}

// stamped is the records stamp read last within one Ready's messages:
// followers in step are sent the same range.
type stamped struct {
	lo   uint64
	recs []wal.Record
}

// verifyApp checks an incoming AppendEntries (or repair answer with
// entries) before the core sees it: every
// record verifies and is the entry it travels with, the records form a
// chain from PrevChecksum, and where this replica's log holds an entry of
// the same index and term as the message says (at PrevLogIndex and for
// every entry), its chain value is the sender's. A refusal is ErrRecord or
// ErrChain; a local record that fails its own verification is the WAL's
// ErrCorrupt (the WAL then fails, and recovery rules on the damage).
func (r *Replica) verifyApp(m *Message) error {
	if len(m.Records) != len(m.Entries) {
		return fmt.Errorf("%w: %d records for %d entries", ErrRecord, len(m.Records), len(m.Entries))
	}
	prev := m.PrevChecksum
	sums := make([]uint32, len(m.Records))
	for k, rec := range m.Records {
		e, sum, sumPrev, err := rec.Decode(len(rec))
		if err != nil {
			return fmt.Errorf("%w: entry %d: %w", ErrRecord, m.PrevLogIndex+1+uint64(k), err)
		}
		want := m.Entries[k]
		if e.Index != want.Index || e.Term != want.Term || !bytes.Equal(e.Data, want.Data) {
			return fmt.Errorf("%w: record %d/%d is not entry %d/%d", ErrRecord, e.Term, e.Index, want.Term, want.Index)
		}
		if sumPrev != prev {
			return fmt.Errorf("%w: record %d chains to %08x, not %08x", ErrChain, e.Index, sumPrev, prev)
		}
		prev, sums[k] = sum, sum
	}
	if err := r.checkLocalChain(m.PrevLogIndex, m.PrevLogTerm, m.PrevChecksum); err != nil {
		return err
	}
	for k, e := range m.Entries {
		if err := r.checkLocalChain(e.Index, e.Term, sums[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkLocalChain compares the sender's chain value at (index, term) with
// this replica's, when the local log holds index with that term. A
// difference is ErrChain after this replica's own record at index has been
// read back and verified (a local record that fails is ErrCorrupt).
func (r *Replica) checkLocalChain(index, term uint64, sum uint32) error {
	if index < r.w.FirstIndex()-1 || index > r.w.LastIndex() {
		return nil
	}
	localTerm, err := r.w.Term(index)
	if err != nil || localTerm != term {
		return nil // the core rejects or truncates: no claim of equality to check
	}
	local, err := r.w.Checksum(index)
	if err != nil {
		return nil
	}
	if local == sum {
		return nil
	}
	if index >= r.w.FirstIndex() {
		if _, err := r.w.Records(index, index+1, math.MaxUint64); err != nil {
			return fmt.Errorf("re-verifying my own record %d: %w", index, err)
		}
	}
	return fmt.Errorf("%w: at %d/%d the sender's chain value is %08x, mine %08x", ErrChain, term, index, sum, local)
}
