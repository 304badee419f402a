package kv

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

// TestXXH64Vectors checks xxh64 against the reference library (libxxhash
// 0.8.1, XXH64 with seed 0) over inputs of byte (7i+3) mod 256 of every
// length class: empty, the 1-byte and 4-byte tails, the 8-byte words, one
// and more 32-byte stripes.
func TestXXH64Vectors(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want uint64
	}{
		{0, 0xef46db3751d8e999}, {1, 0x1f25c8d0bc1f4bb6}, {3, 0x31d2363f52e564c9}, {4, 0x9bb64b7d66ee9fda},
		{7, 0x9a7b149959ce60d8}, {8, 0xdab99d95c6f90092}, {9, 0x170bb6bf975b4c02}, {31, 0xa2aa5f33cc4a6119},
		{32, 0x23c3c17ef790fd97}, {33, 0x50a7cfc7ba588784}, {63, 0x5e3e54b431c7493c}, {64, 0x0eb64b3ef6eeb01f},
		{65, 0xa383b724b2bd12f1}, {100, 0xa61f8d4c170fe531}, {257, 0xb7b604f7e4f822fa},
	} {
		b := make([]byte, tc.n)
		for i := range b {
			b[i] = byte(i*7 + 3)
		}
		if got := xxh64(b); got != tc.want {
			t.Errorf("xxh64 of %d bytes = %#x, want %#x", tc.n, got, tc.want)
		}
	}
}

// A key element with a value larger than the buffer the hasher keeps hashes
// as the concatenation does, and the hasher drops the big buffer after.
func TestHasherLargeValue(t *testing.T) {
	x := newHasher()
	key, value := []byte("k"), make([]byte, ValueBytesMax)
	for i := range value {
		value[i] = byte(i)
	}
	want := xxh64(append(append(append(append([]byte{tagKey}, 1, 0, 0, 0), key...), 7, 0, 0, 0, 0, 0, 0, 0), append([]byte{0, 0, 4, 0}, value...)...))
	if got := hashItem(x, key, value, 7); got != want {
		t.Errorf("hash %#x, want %#x", got, want)
	}
	if cap(x.buf) > hasherBufKeep {
		t.Errorf("hasher keeps a %d-byte buffer, bound %d", cap(x.buf), hasherBufKeep)
	}
}

// sha256Prefix is the element hash H the state hash used before XXH64 (the
// first 8 bytes of SHA-256, little endian), kept for the benchmark.
func sha256Prefix(b []byte) uint64 {
	sum := sha256.Sum256(b)
	return binary.LittleEndian.Uint64(sum[:])
}

// BenchmarkElementHash compares the element hash before (SHA-256 prefix)
// and after (XXH64) on the encodings Apply hashes: a session header (33
// bytes), a kept answer (42 bytes) and a key element with a 100-byte value
// (127 bytes with a 14-byte key).
func BenchmarkElementHash(b *testing.B) {
	for _, el := range []struct {
		name string
		n    int
	}{{"session-33B", 33}, {"response-42B", 42}, {"key-127B", 127}} {
		buf := make([]byte, el.n)
		for _, h := range []struct {
			name string
			fn   func([]byte) uint64
		}{{"sha256", sha256Prefix}, {"xxh64", xxh64}} {
			b.Run(el.name+"/"+h.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(el.n))
				var sink uint64
				for i := range b.N {
					buf[0] = byte(i)
					sink += h.fn(buf)
				}
				if sink == 1 {
					b.Log(sink)
				}
			})
		}
	}
}
