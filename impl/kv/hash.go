package kv

import (
	"crypto/sha256"
	"hash"
)

// The state hash (docs/kv.md, "State hash") is the sum, modulo 2^64, of one
// element hash per part of the state:
//
//	key       H("K" | len(key) u32 | key | revision u64 | len(value) u32 | value)
//	session   H("S" | id u64 | timeoutMs u64 | lastActiveMs u64 | lowestUnacked u64)
//	response  H("R" | session id u64 | seq u64 | code u8 | index u64 | revision u64)
//	clock     H("C" | clockMs u64)
//
// where H is the first 8 bytes, little endian, of SHA-256. A sum of
// independent element hashes does not depend on the order the state was
// built in (two logs that leave the same state give the same hash), can be
// kept incrementally (subtract an element's old hash, add its new one), and
// changes when any one element changes unless two SHA-256 prefixes collide
// (probability 2^-64). The applied index is not part of it: compare hashes
// at equal applied indexes.
type hasher struct {
	h   hash.Hash
	buf []byte
	sum []byte
}

func newHasher() *hasher {
	return &hasher{h: sha256.New(), buf: make([]byte, 0, 64+KeyBytesMax), sum: make([]byte, 0, sha256.Size)}
}

const (
	tagKey      = 'K'
	tagSession  = 'S'
	tagResponse = 'R'
	tagClock    = 'C'
)

func (x *hasher) finish(tail []byte) uint64 {
	x.h.Reset()
	x.h.Write(x.buf)
	if len(tail) > 0 {
		x.h.Write(tail)
	}
	x.sum = x.h.Sum(x.sum[:0])
	return le.Uint64(x.sum)
}

func (x *hasher) session(s *session) uint64 {
	b := append(x.buf[:0], tagSession)
	b = le.AppendUint64(b, s.id)
	b = le.AppendUint64(b, s.timeoutMs)
	b = le.AppendUint64(b, s.lastActiveMs)
	x.buf = le.AppendUint64(b, s.lowestUnacked)
	return x.finish(nil)
}

func (x *hasher) response(id uint64, r response) uint64 {
	b := append(x.buf[:0], tagResponse)
	b = le.AppendUint64(b, id)
	b = le.AppendUint64(b, r.seq)
	b = append(b, byte(r.code))
	b = le.AppendUint64(b, r.index)
	x.buf = le.AppendUint64(b, r.revision)
	return x.finish(nil)
}

func (x *hasher) clock(ms uint64) uint64 {
	x.buf = le.AppendUint64(append(x.buf[:0], tagClock), ms)
	return x.finish(nil)
}
