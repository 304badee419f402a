package wal

import (
	"bytes"
	"errors"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	rng := newRand(1)
	prev := chainSeed(0, 0)
	var buf []byte
	for i := uint64(1); i <= 50; i++ {
		data := make([]byte, rng.IntN(300))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		start := len(buf)
		var sum uint32
		buf, sum = encodeRecord(buf, prev, i, 1+i/10, data)
		r, n, err := decodeRecord(buf[start:], 1<<20)
		if err != nil || n != recordHeaderBytes+len(data) || r.checksum != sum || !bytes.Equal(r.data, data) {
			t.Fatalf("record %d: %+v n %d err %v", i, r, n, err)
		}
		if err := r.follows(i-1, i/10, prev); i > 1 && err != nil {
			t.Fatalf("record %d does not follow: %v", i, err)
		}
		prev = sum
	}
}

// Every single-bit flip anywhere in a record is caught, including in the checksum
// field itself.
func TestRecordEveryBitFlipDetected(t *testing.T) {
	rec, _ := encodeRecord(nil, 0x1234, 7, 3, []byte("some payload bytes"))
	for bit := 0; bit < len(rec)*8; bit++ {
		b := append([]byte(nil), rec...)
		b[bit/8] ^= 1 << (bit % 8)
		if _, _, err := decodeRecord(b, len(b)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip of bit %d not detected: %v", bit, err)
		}
	}
}

// A zero checksum is a value, never a "not sealed, skip" marker.
func TestZeroChecksumIsNotSkip(t *testing.T) {
	rec, _ := encodeRecord(nil, 0, 1, 1, []byte("x"))
	clear(rec[0:4])
	if _, _, err := decodeRecord(rec, len(rec)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("zeroed checksum accepted: %v", err)
	}
	zero := make([]byte, 64)
	if _, _, err := decodeRecord(zero, len(zero)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("all-zero record accepted: %v", err)
	}
	if _, st := decodeBatchHeader(zero); st != headerZero {
		t.Fatalf("zero batch header status %d", st)
	}
	h := make([]byte, 64)
	batchHeader{generation: 1}.encode(h)
	clear(h[0:4])
	if _, st := decodeBatchHeader(h); st != headerDamaged {
		t.Fatalf("batch header with zeroed checksum: status %d", st)
	}
}

// A damaged length field never allocates or reads beyond the buffer.
func TestRecordLengthBounds(t *testing.T) {
	rec, _ := encodeRecord(nil, 0, 1, 1, []byte("abc"))
	for _, length := range []uint32{0xffffffff, 1 << 31, 4, 1000} {
		b := append([]byte(nil), rec...)
		le.PutUint32(b[24:], length)
		if _, _, err := decodeRecord(b, 1<<20); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("length %d: %v", length, err)
		}
	}
	if _, _, err := decodeRecord(rec[:10], 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short header: %v", err)
	}
	if _, _, err := decodeRecord(rec, 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("length above lengthMax: %v", err)
	}
}

func TestRecordFollows(t *testing.T) {
	rec, _ := encodeRecord(nil, 0xaaaa, 5, 3, nil)
	r, _, err := decodeRecord(rec, len(rec))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		index, term uint64
		sum         uint32
		ok          bool
	}{
		"follows":      {4, 3, 0xaaaa, true},
		"lower term":   {4, 2, 0xaaaa, true},
		"gap":          {3, 3, 0xaaaa, false},
		"chain":        {4, 3, 0xaaab, false},
		"term regress": {4, 4, 0xaaaa, false},
	} {
		if err := r.follows(tc.index, tc.term, tc.sum); (err == nil) != tc.ok {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSegmentHeaderValidation(t *testing.T) {
	good := segmentHeader{blockBytes: 512, generation: 3, indexFirst: 10, termPrev: 2, segmentBytes: 8192, checksumPrev: 9}
	b := make([]byte, 64)
	good.encode(b)
	if h, err := decodeSegmentHeader(b); err != nil || h != good {
		t.Fatalf("round trip: %+v %v", h, err)
	}
	for name, mut := range map[string]func(h *segmentHeader){
		"block not power of two": func(h *segmentHeader) { h.blockBytes = 1000 },
		"block too small":        func(h *segmentHeader) { h.blockBytes = 256 },
		"segment too small":      func(h *segmentHeader) { h.segmentBytes = 512 },
		"segment not aligned":    func(h *segmentHeader) { h.segmentBytes = 8192 + 100 },
		"segment huge":           func(h *segmentHeader) { h.segmentBytes = 1 << 40 },
		"first index zero":       func(h *segmentHeader) { h.indexFirst = 0 },
		"unknown flag":           func(h *segmentHeader) { h.flags = 2 },
		"block too large":        func(h *segmentHeader) { h.blockBytes, h.segmentBytes = 2<<20, 8<<20 },
	} {
		h := good
		mut(&h)
		h.encode(b)
		if _, err := decodeSegmentHeader(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The reserved bytes after the fields must be zero, even under a checksum that
	// verifies.
	for _, off := range []int{52, 63} {
		good.encode(b)
		b[off] = 1
		le.PutUint32(b[0:], checksum(b[4:segmentHeaderBytes]))
		if _, err := decodeSegmentHeader(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("reserved byte %d set: %v", off, err)
		}
	}
}

func TestFileNames(t *testing.T) {
	for _, prefix := range []string{prefixSegment, prefixFree, prefixTmp, prefixCorrupt} {
		name := segmentFileName(prefix, 0xabc)
		p, g, ok := parseSegmentFileName(name)
		if !ok || p != prefix || g != 0xabc {
			t.Fatalf("%s: %s %d %v", name, p, g, ok)
		}
	}
	for _, bad := range []string{"seg-1.wal", "seg-000000000000000g.wal", "hardstate", "seg-0000000000000001.wa", "x-0000000000000001.wal"} {
		if _, _, ok := parseSegmentFileName(bad); ok {
			t.Errorf("%s parsed", bad)
		}
	}
}

func TestVerdictString(t *testing.T) {
	for v, s := range map[Verdict]string{Clean: "CLEAN", TornTail: "TORN_TAIL", Truncated: "TRUNCATED", 0: "VERDICT_INVALID"} {
		if v.String() != s {
			t.Errorf("%d: %s", v, v.String())
		}
	}
}
