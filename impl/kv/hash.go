package kv

import "math/bits"

// The state hash (docs/kv.md, "State hash") is the sum, modulo 2^64, of one
// element hash per part of the state:
//
//	key       H("K" | len(key) u32 | key | revision u64 | len(value) u32 | value)
//	session   H("S" | id u64 | timeoutMs u64 | lastActiveMs u64 | lowestUnacked u64)
//	response  H("R" | session id u64 | seq u64 | code u8 | index u64 | revision u64)
//	clock     H("C" | clockMs u64)
//
// where H is XXH64 with seed 0 (xxhash.com; xxh64 below). A sum of
// independent element hashes does not depend on the order the state was
// built in (two logs that leave the same state give the same hash), can be
// kept incrementally (subtract an element's old hash, add its new one), and
// changes when any one element changes unless the two element hashes
// collide (about 2^-64 for states not chosen against the hash). The applied
// index is not part of it: compare hashes at equal applied indexes.
//
// H was the first 8 bytes of SHA-256 until the hash cost a third of a
// node's CPU under load (docs/performance.md); the state hash is a check
// against accidental divergence, not against an adversary, so a
// non-cryptographic 64-bit hash with full avalanche serves it as well.
type hasher struct {
	buf []byte
}

// hasherBufKeep bounds the buffer a hasher keeps between elements (a key
// element with a large value is hashed from a buffer of its size, dropped
// after).
const hasherBufKeep = 64 + KeyBytesMax + 1024

func newHasher() *hasher {
	return &hasher{buf: make([]byte, 0, hasherBufKeep)}
}

const (
	tagKey      = 'K'
	tagSession  = 'S'
	tagResponse = 'R'
	tagClock    = 'C'
)

func (x *hasher) finish(tail []byte) uint64 {
	if len(tail) > 0 {
		x.buf = append(x.buf, tail...)
	}
	h := xxh64(x.buf)
	if cap(x.buf) > hasherBufKeep {
		x.buf = make([]byte, 0, hasherBufKeep)
	}
	return h
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

// XXH64's primes.
const (
	xxPrime1 uint64 = 0x9e3779b185ebca87
	xxPrime2 uint64 = 0xc2b2ae3d27d4eb4f
	xxPrime3 uint64 = 0x165667b19e3779f9
	xxPrime4 uint64 = 0x85ebca77c2b2ae63
	xxPrime5 uint64 = 0x27d4eb2f165667c5
)

// xxh64 is XXH64 of b with seed 0 (the reference algorithm, one-shot);
// TestXXH64Vectors checks it against the reference library's values.
func xxh64(b []byte) uint64 {
	n := len(b)
	var h uint64
	if n >= 32 {
		p1 := xxPrime1 // a variable: the seed sums wrap around, as in the reference
		v1, v2, v3, v4 := p1+xxPrime2, xxPrime2, uint64(0), -p1
		for ; len(b) >= 32; b = b[32:] {
			v1 = xxRound(v1, le.Uint64(b[0:]))
			v2 = xxRound(v2, le.Uint64(b[8:]))
			v3 = xxRound(v3, le.Uint64(b[16:]))
			v4 = xxRound(v4, le.Uint64(b[24:]))
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		h = xxMerge(h, v1)
		h = xxMerge(h, v2)
		h = xxMerge(h, v3)
		h = xxMerge(h, v4)
	} else {
		h = xxPrime5
	}
	h += uint64(n)
	for ; len(b) >= 8; b = b[8:] {
		h ^= xxRound(0, le.Uint64(b))
		h = bits.RotateLeft64(h, 27)*xxPrime1 + xxPrime4
	}
	if len(b) >= 4 {
		h ^= uint64(le.Uint32(b)) * xxPrime1
		h = bits.RotateLeft64(h, 23)*xxPrime2 + xxPrime3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * xxPrime5
		h = bits.RotateLeft64(h, 11) * xxPrime1
	}
	h ^= h >> 33
	h *= xxPrime2
	h ^= h >> 29
	h *= xxPrime3
	h ^= h >> 32
	return h
}

func xxRound(acc, input uint64) uint64 {
	acc += input * xxPrime2
	return bits.RotateLeft64(acc, 31) * xxPrime1
}

func xxMerge(acc, v uint64) uint64 {
	acc ^= xxRound(0, v)
	return acc*xxPrime1 + xxPrime4
}
