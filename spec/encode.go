package spec

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Canonical encoding. Two states are equal exactly when their encodings are
// equal: sets and the bag are kept sorted, and per-server variables are
// written for servers 1..N only. The encoding is what the explorer keeps in
// its queue, and what it fingerprints.

type encoder struct{ b []byte }

func (e *encoder) u8(x uint8)    { e.b = append(e.b, x) }
func (e *encoder) uvar(x int)    { e.b = binary.AppendUvarint(e.b, uint64(x)) }
func (e *encoder) log(l Log)     { e.uvar(len(l)); e.b = append(e.b, l...) }
func (e *encoder) set(s uint8)   { e.u8(s) }
func (e *encoder) id(s ServerID) { e.u8(uint8(s)) }

func (e *encoder) bag(bag []BagEntry) {
	e.uvar(len(bag))
	for k := range bag {
		e.message(&bag[k].M)
		e.u8(bag[k].N)
	}
}

func (e *encoder) message(m *Message) {
	e.u8(uint8(m.Mtype))
	e.u8(m.Mterm)
	e.u8(m.MlastLogTerm)
	e.u8(m.MlastLogIndex)
	e.u8(m.MprevLogIndex)
	e.u8(m.MprevLogTerm)
	e.log(m.Mentries)
	e.log(m.Mlog)
	e.u8(m.McommitIndex)
	e.u8(m.MleaderCommit)
	var flags uint8
	if m.MvoteGranted {
		flags |= 1
	}
	if m.Msuccess {
		flags |= 2
	}
	if m.Mambiguous {
		flags |= 4
	}
	e.u8(flags)
	e.u8(m.MmatchIndex)
	e.id(m.Msource)
	e.id(m.Mdest)
}

// Encode appends the canonical encoding of s to b. (The trace checker,
// which keeps no history variables, compares its states field by field
// instead: tracestate.go.)
func (m *Model) Encode(b []byte, s *State) []byte {
	e := encoder{b: b}
	e.bag(s.Messages)
	e.uvar(len(s.Elections))
	for k := range s.Elections {
		el := &s.Elections[k]
		e.u8(el.Eterm)
		e.id(el.Eleader)
		e.log(el.Elog)
		e.set(uint8(el.Evotes))
		e.log(Log(el.EvoterLog))
	}
	e.uvar(len(s.AllLogs))
	for _, l := range s.AllLogs {
		e.log(l)
	}
	return m.encodeVars(e, s)
}

func (m *Model) encodeVars(e encoder, s *State) []byte {
	for _, i := range m.servers {
		e.u8(s.CurrentTerm[i])
		e.u8(uint8(s.State[i]))
		e.id(s.VotedFor[i])
		e.log(s.Log[i])
		e.u8(s.CommitIndex[i])
		e.set(uint8(s.VotesResponded[i]))
		e.set(uint8(s.VotesGranted[i]))
		e.log(Log(s.VoterLog[i]))
		for _, j := range m.servers {
			e.u8(s.NextIndex[i][j])
			e.u8(s.MatchIndex[i][j])
		}
	}
	if m.durable() {
		for _, i := range m.servers {
			e.u8(s.DurableLen[i])
			e.u8(s.LearnedCommit[i])
			e.u8(uint8(s.Verdict[i]))
			e.u8(s.TruncatedAtTerm[i])
			switch {
			case m.Production:
				p := &s.Persisted[i]
				e.u8(p.CurrentTerm)
				e.id(p.VotedFor)
				e.u8(p.TruncatedAtTerm)
				e.log(s.StaleLog[i])
				e.u8(s.StaleDurable[i])
				e.bag(s.Held[i])
			case m.Has(BugTruncationNotSynced):
				e.log(s.StaleLog[i])
			}
		}
		e.uvar(len(s.Committed))
		for _, c := range s.Committed {
			e.u8(c.Index)
			e.u8(c.Term)
			e.u8(c.CommitTerm)
			if m.Membership {
				e.u8(c.Config)
			}
		}
		e.u8(s.CrashesLeft)
		e.u8(s.CorruptionsLeft)
		if m.BadCommits > 0 {
			e.u8(s.BadCommitsLeft)
		}
		if m.PowerLosses > 0 {
			for _, i := range m.servers {
				e.u8(s.BatchStart[i])
				e.set(uint8(s.VotesAmbiguous[i]))
			}
			e.set(uint8(s.Damaged))
			e.u8(s.PowerLossesLeft)
		}
		if m.MarkedVotes && m.PowerLosses == 0 {
			for _, i := range m.servers {
				e.set(uint8(s.VotesAmbiguous[i]))
			}
		}
		if m.Repair {
			e = m.encodeRepair(e, s)
		}
	}
	if m.Wipes > 0 {
		e.wipe(m, &s.Wipe)
	}
	return e.b
}

type decoder struct {
	s   string
	pos int
}

func (d *decoder) u8() uint8 {
	x := d.s[d.pos]
	d.pos++
	return x
}

func (d *decoder) uvar() int {
	var x uint64
	var shift uint
	for {
		c := d.s[d.pos]
		d.pos++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int(x)
		}
		shift += 7
	}
}

// log slices the log out of the encoding without copying.
func (d *decoder) log() Log {
	n := d.uvar()
	l := Log(d.s[d.pos : d.pos+n])
	d.pos += n
	return l
}

// bag decodes a bag: nil when empty.
func (d *decoder) bag() []BagEntry {
	n := d.uvar()
	if n == 0 {
		return nil
	}
	bag := make([]BagEntry, n)
	for k := range bag {
		d.message(&bag[k].M)
		bag[k].N = d.u8()
	}
	return bag
}

func (d *decoder) message(m *Message) {
	m.Mtype = MType(d.u8())
	m.Mterm = d.u8()
	m.MlastLogTerm = d.u8()
	m.MlastLogIndex = d.u8()
	m.MprevLogIndex = d.u8()
	m.MprevLogTerm = d.u8()
	m.Mentries = d.log()
	m.Mlog = d.log()
	m.McommitIndex = d.u8()
	m.MleaderCommit = d.u8()
	flags := d.u8()
	m.MvoteGranted = flags&1 != 0
	m.Msuccess = flags&2 != 0
	m.Mambiguous = flags&4 != 0
	m.MmatchIndex = d.u8()
	m.Msource = ServerID(d.u8())
	m.Mdest = ServerID(d.u8())
}

// Decode is the inverse of Encode. The logs of the result share memory with
// enc, which must not change afterwards (a string cannot).
func (m *Model) Decode(enc string) (s *State, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("spec: decode state: %v", r)
		}
	}()
	d := decoder{s: enc}
	s = &State{}
	s.Messages = d.bag()
	if n := d.uvar(); n > 0 {
		s.Elections = make([]Election, n)
		for k := range s.Elections {
			el := &s.Elections[k]
			el.Eterm = d.u8()
			el.Eleader = ServerID(d.u8())
			el.Elog = d.log()
			el.Evotes = ServerSet(d.u8())
			el.EvoterLog = VoterLog(d.log())
		}
	}
	if n := d.uvar(); n > 0 {
		s.AllLogs = make([]Log, n)
		for k := range s.AllLogs {
			s.AllLogs[k] = d.log()
		}
	}
	for _, i := range m.servers {
		s.CurrentTerm[i] = d.u8()
		s.State[i] = Role(d.u8())
		s.VotedFor[i] = ServerID(d.u8())
		s.Log[i] = d.log()
		s.CommitIndex[i] = d.u8()
		s.VotesResponded[i] = ServerSet(d.u8())
		s.VotesGranted[i] = ServerSet(d.u8())
		s.VoterLog[i] = VoterLog(d.log())
		for _, j := range m.servers {
			s.NextIndex[i][j] = d.u8()
			s.MatchIndex[i][j] = d.u8()
		}
	}
	if m.durable() {
		for _, i := range m.servers {
			s.DurableLen[i] = d.u8()
			s.LearnedCommit[i] = d.u8()
			s.Verdict[i] = Verdict(d.u8())
			s.TruncatedAtTerm[i] = d.u8()
			switch {
			case m.Production:
				s.Persisted[i] = Persisted{CurrentTerm: d.u8(), VotedFor: ServerID(d.u8()), TruncatedAtTerm: d.u8()}
				s.StaleLog[i] = d.log()
				s.StaleDurable[i] = d.u8()
				s.Held[i] = d.bag()
			case m.Has(BugTruncationNotSynced):
				s.StaleLog[i] = d.log()
			}
		}
		if n := d.uvar(); n > 0 {
			s.Committed = make([]CommittedEntry, n)
			for k := range s.Committed {
				s.Committed[k] = CommittedEntry{Index: d.u8(), Term: d.u8(), CommitTerm: d.u8()}
				if m.Membership {
					s.Committed[k].Config = d.u8()
				}
			}
		}
		s.CrashesLeft = d.u8()
		s.CorruptionsLeft = d.u8()
		if m.BadCommits > 0 {
			s.BadCommitsLeft = d.u8()
		}
		if m.PowerLosses > 0 {
			for _, i := range m.servers {
				s.BatchStart[i] = d.u8()
				s.VotesAmbiguous[i] = ServerSet(d.u8())
			}
			s.Damaged = ServerSet(d.u8())
			s.PowerLossesLeft = d.u8()
		}
		if m.MarkedVotes && m.PowerLosses == 0 {
			for _, i := range m.servers {
				s.VotesAmbiguous[i] = ServerSet(d.u8())
			}
		}
		if m.Repair {
			m.decodeRepair(&d, s)
		}
	}
	if m.Wipes > 0 {
		d.wipe(m, &s.Wipe)
	}
	if d.pos != len(enc) {
		return nil, fmt.Errorf("spec: decode state: %d trailing bytes", len(enc)-d.pos)
	}
	return s, nil
}

// Fingerprint is a 64-bit hash of a state's canonical encoding, as TLC keeps
// 64-bit fingerprints. (xxHash64's mixing constants and round structure.)
func Fingerprint(b []byte) uint64 {
	const (
		p1 = 0x9E3779B185EBCA87
		p2 = 0xC2B2AE3D27D4EB4F
		p3 = 0x165667B19E3779F9
		p4 = 0x85EBCA77C2B2AE63
		p5 = 0x27D4EB2F165667C5
	)
	h := uint64(p5) + uint64(len(b))
	for len(b) >= 8 {
		k := binary.LittleEndian.Uint64(b)
		k *= p2
		k = bits.RotateLeft64(k, 31)
		k *= p1
		h ^= k
		h = bits.RotateLeft64(h, 27)*p1 + p4
		b = b[8:]
	}
	if len(b) >= 4 {
		h ^= uint64(binary.LittleEndian.Uint32(b)) * p1
		h = bits.RotateLeft64(h, 23)*p2 + p3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * p5
		h = bits.RotateLeft64(h, 11) * p1
	}
	h ^= h >> 33
	h *= p2
	h ^= h >> 29
	h *= p3
	h ^= h >> 32
	return h
}
