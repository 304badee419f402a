package wal

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// FuzzDecodeRecord feeds arbitrary bytes to the record decoder: it never panics, never
// reads past its buffer, and whatever it accepts re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range recordSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := decodeRecord(b, len(b))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if n < recordHeaderBytes || n > len(b) {
			t.Fatalf("size %d for %d bytes", n, len(b))
		}
		enc, sum := encodeRecord(nil, r.checksumPrev, r.index, r.term, r.data)
		if !bytes.Equal(enc, b[:n]) || sum != r.checksum {
			t.Fatalf("accepted bytes do not re-encode identically")
		}
		// The exported decoder accepts exactly the whole records the internal one does.
		e, sum2, prev, err := Record(b).Decode(len(b))
		switch {
		case n != len(b) && err == nil:
			t.Fatalf("Decode accepted %d bytes holding a record of %d", len(b), n)
		case n != len(b) && !errors.Is(err, ErrCorrupt):
			t.Fatalf("Decode error %v does not wrap ErrCorrupt", err)
		case n == len(b) && (err != nil || sum2 != sum || prev != r.checksumPrev || e.Index != r.index || !bytes.Equal(e.Data, r.data)):
			t.Fatalf("Decode of a whole record: %+v %08x %08x %v", e, sum2, prev, err)
		}
	})
}

// FuzzAppendRecords feeds arbitrary bytes, split into records along their length
// fields, to AppendRecords after a three-entry log: it never panics, a refusal wraps
// ErrCorrupt, ErrChain or ErrInvalid and changes nothing, and accepted records are
// stored byte for byte (read back from the tail cache, then from the disk).
func FuzzAppendRecords(f *testing.F) {
	prev := fuzzAppendTipChecksum()
	var valid []byte
	for i := uint64(4); i <= 6; i++ {
		var r Record
		r, prev = EncodeRecord(prev, Entry{Index: i, Term: 2 + i/6, Data: payload(i, 2, 0, int(i*7))})
		valid = append(valid, r...)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-3])
	bad := append([]byte(nil), valid...)
	bad[40] ^= 1
	f.Add(bad)
	f.Add(append(append([]byte(nil), valid...), valid[:40]...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<14 {
			return
		}
		recs := splitRecords(data)
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
		w, _ := mustOpen(t, fs, fuzzOptions())
		defer w.Close()
		mustAppend(t, w, entries(1, 3, 2))
		w.flushOnce()
		err := w.AppendRecords(recs)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrChain) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("refusal %v wraps none of ErrCorrupt, ErrChain, ErrInvalid", err)
			}
			if w.LastIndex() != 3 || w.NextStep() != StepNone {
				t.Fatalf("refused records changed the log: last %d", w.LastIndex())
			}
			return
		}
		checkStored := func(where string) {
			got, err := w.Records(4, w.LastIndex()+1, 1<<40)
			if err != nil || len(got) != len(recs) {
				t.Fatalf("%s: %d records, %v", where, len(got), err)
			}
			for i := range got {
				if !bytes.Equal(got[i], recs[i]) {
					t.Fatalf("%s: record %d stored differently", where, i)
				}
			}
		}
		checkStored("tail cache")
		if err := w.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		w.cache, w.cacheFirst, w.cacheBytes = recordRing{}, w.tip.index+1, 0 // read from the disk
		w.mu.Unlock()
		checkStored("segments")
	})
}

func fuzzAppendTipChecksum() uint32 {
	prev := chainSeed(0, 0)
	for _, e := range entries(1, 3, 2) {
		_, prev = EncodeRecord(prev, e)
	}
	return prev
}

// splitRecords cuts data into records along their length fields; what cannot be
// framed is one last record.
func splitRecords(data []byte) []Record {
	var out []Record
	for len(data) > 0 {
		n := len(data)
		if len(data) >= recordHeaderBytes {
			if size := recordHeaderBytes + uint64(le.Uint32(data[24:])); size <= uint64(len(data)) {
				n = int(size)
			}
		}
		out = append(out, Record(data[:n]))
		data = data[n:]
	}
	return out
}

func recordSeeds() [][]byte {
	a, _ := encodeRecord(nil, chainSeed(0, 0), 1, 1, []byte("hello"))
	b, _ := encodeRecord(nil, 0, 1<<40, 7, nil)
	c, _ := encodeRecord(nil, 0xffffffff, 3, 3, bytes.Repeat([]byte{0}, 100))
	huge := append([]byte(nil), a...)
	le.PutUint32(huge[24:], 0xfffffff0)
	return [][]byte{a, b, c, huge, make([]byte, 40), a[:20]}
}

// fuzzBase is a real two-segment log image made once: the fuzzer mutates it.
var fuzzBase struct {
	once     sync.Once
	segments [][]byte // images of the seg-* files, oldest first
	names    []string
	hard     []byte
}

func fuzzOptions() Options {
	o := manual(smallOptions())
	o.ReadRetries = 1
	return o
}

func buildFuzzBase(tb testing.TB) {
	fuzzBase.once.Do(func() {
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
		w, _ := mustOpen(tb, fs, fuzzOptions())
		for i := uint64(1); i <= 24; i++ {
			mustAppend(tb, w, []Entry{{Index: i, Term: 1 + i/8, Data: payload(i, 1+i/8, 0, int(i*11%90))}})
			if i%3 == 0 {
				w.flushOnce()
			}
		}
		if err := w.SetHardState(HardState{Term: 3, Vote: 2, Commit: 20}); err != nil {
			tb.Fatal(err)
		}
		_ = w.Close()
		fuzzBase.names = listFiles(tb, fs, prefixSegment)
		for _, n := range fuzzBase.names {
			b, _ := fs.ReadFile(segPath(n))
			fuzzBase.segments = append(fuzzBase.segments, b)
		}
		fuzzBase.hard, _ = fs.ReadFile(segPath(hardStateName))
	})
}

// FuzzRecover feeds arbitrary bytes to recovery as a segment file. The first byte
// chooses how: 0, the bytes are the whole file; 1, they follow a valid segment header;
// 2, they overwrite the tail of a real log's last segment from an offset given by the
// second byte. Recovery never panics, returns a verdict, leaves a log that reads back
// and takes appends, and is idempotent: a second open is CLEAN with the same log.
func FuzzRecover(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add(append([]byte{2, 5}, bytes.Repeat([]byte{0xff}, 600)...))
	f.Fuzz(runFuzzRecover)
}

func runFuzzRecover(t *testing.T, data []byte) {
	if len(data) == 0 || len(data) > 1<<16 {
		return
	}
	buildFuzzBase(t)
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	if err := fs.MkdirAll(testDir); err != nil {
		t.Fatal(err)
	}
	_ = fs.WriteFile(segPath(hardStateName), fuzzBase.hard)
	last := len(fuzzBase.names) - 1
	for i := range last {
		_ = fs.WriteFile(segPath(fuzzBase.names[i]), fuzzBase.segments[i])
	}
	var img []byte
	switch data[0] % 3 {
	case 0:
		img = data[1:]
	case 1:
		h := segmentHeader{blockBytes: 512, generation: 1000, indexFirst: 1, segmentBytes: uint64(alignUp(int64(512+len(data)), 512)),
			checksumPrev: chainSeed(0, 0)}
		img = make([]byte, h.segmentBytes)
		h.encode(img)
		copy(img[512:], data[1:])
	case 2:
		img = append([]byte(nil), fuzzBase.segments[last]...)
		off := 512
		if len(data) > 1 {
			off = min(64+int(data[1])*16, len(img))
		}
		copy(img[off:], data[min(2, len(data)):])
	}
	name := fuzzBase.names[last]
	if data[0]%3 == 1 {
		name = segmentFileName(prefixSegment, 1000)
	}
	_ = fs.WriteFile(segPath(name), img)
	checkRecoveryProperties(t, fs)
}

func checkRecoveryProperties(t *testing.T, fs *vfs.MemFS) {
	opts := fuzzOptions()
	w, rec, err := Open(fs, testDir, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if rec.Verdict < Clean || rec.Verdict > Ambiguous || rec.IndexLast+1 < rec.IndexFirst {
		t.Fatalf("recovery %+v", rec)
	}
	var before []Entry
	if rec.IndexFirst <= rec.IndexLast {
		before = mustEntries(t, w, rec.IndexFirst, rec.IndexLast+1)
	}
	_ = w.Close()
	w, rec2, err := Open(fs, testDir, opts)
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	defer w.Close()
	if rec2.Verdict != Clean || rec2.IndexFirst != rec.IndexFirst || rec2.IndexLast != rec.IndexLast {
		t.Fatalf("second open %+v after %+v", rec2, rec)
	}
	if rec.IndexFirst <= rec.IndexLast {
		after := mustEntries(t, w, rec.IndexFirst, rec.IndexLast+1)
		for i := range after {
			if after[i].Term != before[i].Term || !bytes.Equal(after[i].Data, before[i].Data) {
				t.Fatalf("entry %d changed between opens", after[i].Index)
			}
		}
	}
	term, err := w.Term(w.LastIndex())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, []Entry{{Index: w.LastIndex() + 1, Term: max(term, 1), Data: []byte("after")}})
	w.flushOnce()
	if w.Failed() || w.DurableIndex() != w.LastIndex() {
		t.Fatalf("append after recovery: failed %v durable %d last %d", w.Err(), w.DurableIndex(), w.LastIndex())
	}
}

// FuzzHardState feeds arbitrary bytes to hard-state recovery. The first byte chooses
// how: 0, the bytes are the whole file; 1, they overwrite the real file from an offset
// given by the second byte (in 32-byte steps, so both slots are reachable). Recovery
// never fails on a working disk, returns the state of a slot that verifies in the
// image (or the zero state when none does), says CLEAN only when both slots verify and
// agree, and leaves a file that the next open finds with the same state, CLEAN, or
// TRUNCATED (H8) after a TRUNCATED open.
func FuzzHardState(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 0xff})
	f.Add([]byte{1, 128, 0xff})
	f.Add(append([]byte{1, 128}, bytes.Repeat([]byte{0}, 64)...))
	// Both slots carry the AMBIGUOUS mark (flags bit 1, with its term).
	marked := hardStateSlot{sequence: 2, state: HardState{Term: 3, Vote: 1, TruncatedAtTerm: 3, Ambiguous: true}}.encode()
	f.Add(append(append(append([]byte{0}, marked...), make([]byte, hardStateSlotB-hardStateSlotBytes)...), marked...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 2*hardStateFileBytes {
			return
		}
		buildFuzzBase(t)
		img := data[1:]
		if data[0]%2 == 1 {
			img = append([]byte(nil), fuzzBase.hard...)
			off := 0
			if len(data) > 1 {
				off = min(int(data[1])*32, len(img))
				data = data[1:]
			}
			copy(img[off:], data[1:])
		}
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
		if err := fs.MkdirAll(testDir); err != nil {
			t.Fatal(err)
		}
		for i, name := range fuzzBase.names {
			_ = fs.WriteFile(segPath(name), fuzzBase.segments[i])
		}
		_ = fs.WriteFile(segPath(hardStateName), img)

		var slots []HardState
		for _, off := range []int{0, hardStateSlotB} {
			if off < len(img) {
				if s, ok := decodeHardStateSlot(img[off:]); ok {
					slots = append(slots, s.state)
				}
			}
		}
		opts := fuzzOptions()
		w, rec, err := Open(fs, testDir, opts)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		switch {
		case len(slots) == 0 && (rec.HardState != HardState{} || rec.HardStateVerdict != Truncated):
			t.Fatalf("no slot verifies, yet %v with %+v", rec.HardStateVerdict, rec.HardState)
		case len(slots) > 0 && !slices.Contains(slots, rec.HardState):
			t.Fatalf("recovered %+v, which is in no verifying slot %+v", rec.HardState, slots)
		case rec.HardStateVerdict == Clean && (len(slots) != 2 || slots[0] != slots[1]):
			t.Fatalf("CLEAN with slots %+v", slots)
		}
		if got := w.HardState(); got != rec.HardState {
			t.Fatalf("HardState() %+v, recovered %+v", got, rec.HardState)
		}
		_ = w.Close()
		w, rec2, err := Open(fs, testDir, opts)
		if err != nil {
			t.Fatalf("second open: %v", err)
		}
		defer w.Close()
		wantAgain := Clean // a TRUNCATED hard state stays marked (H8)
		if rec.HardStateVerdict == Truncated {
			wantAgain = Truncated
		}
		if rec2.HardStateVerdict != wantAgain || rec2.HardState != rec.HardState {
			t.Fatalf("second open %v %+v after %v %+v", rec2.HardStateVerdict, rec2.HardState, rec.HardStateVerdict, rec.HardState)
		}
	})
}

var writeCorpus = flag.Bool("writecorpus", false, "write the fuzz seed corpus to testdata/fuzz")

// TestWriteFuzzCorpus (with -writecorpus) regenerates the checked-in seed corpus.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*writeCorpus {
		t.Skip("run with -writecorpus to regenerate testdata/fuzz")
	}
	buildFuzzBase(t)
	write := func(target, name string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(b)))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range recordSeeds() {
		write("FuzzDecodeRecord", fmt.Sprintf("seed-%d", i), s)
	}
	last := fuzzBase.segments[len(fuzzBase.segments)-1]
	write("FuzzRecover", "raw-real-segment", append([]byte{0}, last[:2048]...))
	write("FuzzRecover", "raw-garbage", append([]byte{0}, bytes.Repeat([]byte("DRWS"), 300)...))
	write("FuzzRecover", "header-then-zero", append([]byte{1}, make([]byte, 1024)...))
	body := last[512:1536]
	write("FuzzRecover", "header-then-real-batches", append([]byte{1}, body...))
	flipped := append([]byte(nil), body...)
	flipped[100] ^= 4
	write("FuzzRecover", "header-then-flipped-batch", append([]byte{1}, flipped...))
	write("FuzzRecover", "tail-overwrite-zero", append([]byte{2, 60}, make([]byte, 512)...))
	write("FuzzRecover", "tail-overwrite-header", append([]byte{2, 28}, last[512:600]...))
	write("FuzzRecover", "tail-overwrite-garbage", append([]byte{2, 0}, bytes.Repeat([]byte{0xa5}, 700)...))
}
