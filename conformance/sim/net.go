package sim

import (
	"hash/fnv"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/trace"
)

// network is the simulated network: every message gets a delay (reordering
// follows), and may be dropped, duplicated, or cut by a partition.
type network struct {
	s       *Sim
	blocked map[[2]raft.NodeID]bool // [from, to]: the link drops everything
	// stalled links hold what they carry, in order, until the network
	// heals (a transport's queue towards a peer it cannot reach): held
	// messages then arrive, stale, perhaps to a receiver that restarted.
	stalled map[[2]raft.NodeID]bool
	held    []heldMessage
}

type heldMessage struct {
	m    replica.Message
	orig *replica.Message
}

func (nw *network) init(s *Sim) {
	nw.s = s
	nw.blocked = map[[2]raft.NodeID]bool{}
	nw.stalled = map[[2]raft.NodeID]bool{}
}

// send puts a message on the wire.
func (nw *network) send(m replica.Message) {
	s := nw.s
	f := s.opts.Faults
	if f.Drops && !s.healing && s.chance(s.opts.Rates.Drop) {
		s.Counts.DropsInjected++
		nw.drop(&m, &m)
		return
	}
	// orig is what was sent: a drop is a drop of it, even if the wire
	// damaged the copy in flight.
	orig := m
	if f.WireFlips && !s.healing && m.Type == raft.MsgApp && len(m.Entries) > 0 && s.chance(s.opts.Rates.WireFlip) {
		m = nw.flipInTransit(m)
	}
	if f.WireFlips && !s.healing && m.Chunk != nil && len(m.Chunk.Data) > 0 && s.chance(s.opts.Rates.WireFlip) {
		m = nw.flipChunk(m)
	}
	d := s.randDur(50*time.Microsecond, time.Millisecond)
	if f.Delays && !s.healing && s.chance(s.opts.Rates.Delay) {
		s.Counts.Delayed++
		d = s.randDur(time.Millisecond, s.opts.Rates.delayMax())
	}
	if f.Dups && !s.healing && s.chance(s.opts.Rates.Dup) {
		s.Counts.Duplicated++
		nw.event("DuplicateMessage", &orig.Message)
		d2 := s.randDur(50*time.Microsecond, 20*time.Millisecond)
		s.at(d2, func() { nw.deliver(m, &orig) })
	}
	sum := dataSum(&m)
	s.at(d, func() {
		if got := dataSum(&m); got != sum {
			s.violation("MessageImmutable: %v changed in flight (entries or records mutated after it was sent)", m.Message)
		}
		nw.deliver(m, &orig)
	})
}

// dataSum hashes a message's entry data and records: nothing may change
// them once sent (the sender's WAL cache, the receiver's WAL and the
// network all share them).
func dataSum(m *replica.Message) uint64 {
	h := fnv.New64a()
	for _, e := range m.Entries {
		h.Write(e.Data)
	}
	for _, r := range m.Records {
		h.Write(r)
	}
	if m.Chunk != nil {
		h.Write(m.Chunk.Data)
	}
	return h.Sum64()
}

// deliver hands a message to its recipient, or loses it (recipient down,
// link cut). orig is the message as sent.
func (nw *network) deliver(m replica.Message, orig *replica.Message) {
	dst := nw.s.Node(m.To)
	if nw.stalled[[2]raft.NodeID{m.From, m.To}] {
		nw.held = append(nw.held, heldMessage{m: m, orig: orig})
		return
	}
	if dst.r == nil || nw.blocked[[2]raft.NodeID{m.From, m.To}] {
		nw.drop(&m, orig)
		return
	}
	nw.s.Counts.Delivered++
	dst.handle(replica.Event{Kind: replica.EventMessage, Msg: m})
}

func (nw *network) drop(m, orig *replica.Message) {
	nw.s.Counts.Dropped++
	nw.event("DropMessage", &orig.Message)
}

// event writes a network step on a spec message to the trace.
func (nw *network) event(action string, m *raft.Message) {
	if !nw.s.opts.Trace || m.Type == raft.MsgSnap {
		// A snapshot chunk is no spec message: the InstallSnapshotRequest
		// it carries a part of stays in flight until the follower's core
		// takes it whole.
		return
	}
	tm := raft.TraceMessage(m, nil)
	if tm == nil {
		return
	}
	nw.s.addEvent(trace.Event{Action: action, Node: raft.TraceName(nil, m.To), Peer: raft.TraceName(nil, m.From), Msg: tm})
}

// isolate cuts every link of id, both ways.
func (nw *network) isolate(id raft.NodeID) {
	for _, n := range nw.s.Nodes {
		if n.ID != id {
			nw.blocked[[2]raft.NodeID{id, n.ID}] = true
			nw.blocked[[2]raft.NodeID{n.ID, id}] = true
		}
	}
}

// cut blocks one direction of one link.
func (nw *network) cut(from, to raft.NodeID) { nw.blocked[[2]raft.NodeID{from, to}] = true }

// stall holds what the link from→to carries until the network heals.
func (nw *network) stall(from, to raft.NodeID) { nw.stalled[[2]raft.NodeID{from, to}] = true }

// heal ends every partition; held messages arrive over the next
// milliseconds, in the order they were sent.
func (nw *network) heal() {
	clear(nw.blocked)
	clear(nw.stalled)
	held := nw.held
	nw.held = nil
	for k, h := range held {
		nw.s.at(time.Duration(k+1)*20*time.Microsecond, func() { nw.deliver(h.m, h.orig) })
	}
}

// flipInTransit flips one bit of one entry's payload, in the entry and in
// its record alike (the damage a transport checksum missed: memory after
// the checksum was computed, or a collision). The receiver must refuse it.
func (nw *network) flipInTransit(m replica.Message) replica.Message {
	s := nw.s
	k := s.rng.IntN(len(m.Entries))
	e := m.Entries[k]
	if len(e.Data) == 0 || len(m.Records) != len(m.Entries) {
		return m
	}
	s.Counts.WireFlips++
	bit := s.rng.IntN(len(e.Data) * 8)
	data := append([]byte(nil), e.Data...)
	data[bit/8] ^= 1 << (bit % 8)
	rec := append(wal.Record(nil), m.Records[k]...)
	off := len(rec) - len(e.Data)
	rec[off+bit/8] ^= 1 << (bit % 8)
	m.Entries = append([]raft.Entry(nil), m.Entries...)
	m.Records = append([]wal.Record(nil), m.Records...)
	m.Entries[k].Data, m.Records[k] = data, rec
	return m
}
