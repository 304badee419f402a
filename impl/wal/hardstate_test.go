package wal

import (
	"errors"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// hsDisk returns a disk whose hard-state file holds the given slots (nil: slot left
// as garbage), plus one segment when withLog.
func hsDisk(t *testing.T, a, b *hardStateSlot, withLog bool) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := manual(smallOptions())
	w, _ := mustOpen(t, fs, opts)
	if withLog {
		fill(t, w, 3)
	}
	_ = w.Close()
	img := make([]byte, hardStateFileBytes)
	for i := range img {
		img[i] = 0x5a
	}
	if a != nil {
		copy(img, a.encode())
	}
	if b != nil {
		copy(img[hardStateSlotB:], b.encode())
	}
	if err := fs.WriteFile(segPath(hardStateName), img); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestHardStateCases(t *testing.T) {
	s1 := &hardStateSlot{sequence: 7, state: HardState{Term: 3, Vote: 2, Commit: 10}}
	s2 := &hardStateSlot{sequence: 8, state: HardState{Term: 4, Vote: 0, Commit: 11, TruncatedAtTerm: 2}}
	s1alt := &hardStateSlot{sequence: 7, state: HardState{Term: 3, Vote: 1}}
	for _, tc := range []struct {
		label string
		fs    func(t *testing.T) *vfs.MemFS
		want  HardState
	}{
		{"H1", func(t *testing.T) *vfs.MemFS { return vfs.NewMemFS(vfs.MemConfig{}) }, HardState{}},
		{"H2", func(t *testing.T) *vfs.MemFS {
			fs := hsDisk(t, s1, s1, true)
			if err := fs.Remove(segPath(hardStateName)); err != nil {
				t.Fatal(err)
			}
			if err := fs.SyncDir(testDir); err != nil {
				t.Fatal(err)
			}
			return fs
		}, HardState{}},
		{"H3", func(t *testing.T) *vfs.MemFS { return hsDisk(t, s1, s1, true) }, s1.state},
		{"H4", func(t *testing.T) *vfs.MemFS { return hsDisk(t, s2, s1, true) }, s2.state},
		{"H5", func(t *testing.T) *vfs.MemFS { return hsDisk(t, nil, s1, true) }, s1.state},
		{"H5", func(t *testing.T) *vfs.MemFS { return hsDisk(t, s2, nil, true) }, s2.state},
		{"H6", func(t *testing.T) *vfs.MemFS { return hsDisk(t, s1, s2, true) }, s2.state},
		{"H6", func(t *testing.T) *vfs.MemFS { return hsDisk(t, s1, s1alt, true) }, s1.state},
		{"H7", func(t *testing.T) *vfs.MemFS { return hsDisk(t, nil, nil, true) }, HardState{}},
	} {
		t.Run(tc.label, func(t *testing.T) {
			fs := tc.fs(t)
			fs.Restart()
			w, rec := mustOpen(t, fs, manual(smallOptions()))
			want := hardStateCases[tc.label]
			if rec.HardStateVerdict != want.verdict || rec.HardStateReason[:2] != tc.label || rec.HardState != tc.want {
				t.Fatalf("hard state %+v %s (%s), want %+v %s (%s)", rec.HardState, rec.HardStateVerdict, rec.HardStateReason, tc.want, want.verdict, tc.label)
			}
			_ = w.Close()
			// Recovery rewrote both copies: the next open agrees, and is CLEAN unless
			// this one was TRUNCATED, whose mark a restart never forgets (H8).
			w, rec2 := mustOpen(t, fs, manual(smallOptions()))
			defer w.Close()
			wantAgain := "H3"
			if want.verdict == Truncated {
				wantAgain = "H8"
			}
			if rec2.HardStateReason[:2] != wantAgain || rec2.HardStateVerdict != hardStateCases[wantAgain].verdict ||
				rec2.HardState != tc.want || w.HardStateLost() != (wantAgain == "H8") {
				t.Fatalf("reopen: %+v %s (%s), want %s", rec2.HardState, rec2.HardStateVerdict, rec2.HardStateReason, wantAgain)
			}
		})
	}
}

// The loss mark of H2/H6/H7 outlives restarts and hard-state writes, and only
// ClearHardStateLoss (an operator's decision) removes it.
func TestHardStateLossIsSticky(t *testing.T) {
	fs := hsDisk(t, nil, nil, true) // H7
	opts := manual(smallOptions())
	reopen := func(w *WAL) (*WAL, *Recovery) {
		t.Helper()
		_ = w.Close()
		return mustOpen(t, fs, opts)
	}
	w, rec := mustOpen(t, fs, opts)
	if rec.HardStateVerdict != Truncated || !w.HardStateLost() {
		t.Fatalf("H7: %s (%s)", rec.HardStateVerdict, rec.HardStateReason)
	}
	hs := HardState{Term: 9, Vote: 1}
	if err := w.SetHardState(hs); err != nil {
		t.Fatal(err)
	}
	w, rec = reopen(w)
	if rec.HardStateVerdict != Truncated || rec.HardStateReason[:2] != "H8" || rec.HardState != hs {
		t.Fatalf("after a hard-state write: %+v %s (%s)", rec.HardState, rec.HardStateVerdict, rec.HardStateReason)
	}
	if err := w.ClearHardStateLoss(); err != nil {
		t.Fatal(err)
	}
	if w.HardStateLost() {
		t.Fatal("mark still set after ClearHardStateLoss")
	}
	w, rec = reopen(w)
	defer w.Close()
	if rec.HardStateVerdict != Clean || rec.HardState != hs || w.HardStateLost() {
		t.Fatalf("after ClearHardStateLoss: %+v %s (%s)", rec.HardState, rec.HardStateVerdict, rec.HardStateReason)
	}
	if err := w.ClearHardStateLoss(); err != nil {
		t.Fatalf("clearing without a mark: %v", err)
	}
}

// A torn write of a marked state keeps the mark: H8 is decided on the surviving copy.
func TestHardStateLossSurvivesTornWrite(t *testing.T) {
	marked := &hardStateSlot{sequence: 4, state: HardState{Term: 2, Vote: 1}, lost: true}
	for _, fs := range []*vfs.MemFS{hsDisk(t, nil, marked, true), hsDisk(t, marked, nil, true)} {
		w, rec := mustOpen(t, fs, manual(smallOptions()))
		if rec.HardStateVerdict != Truncated || rec.HardStateReason[:2] != "H8" || rec.HardState != marked.state {
			t.Fatalf("%+v %s (%s)", rec.HardState, rec.HardStateVerdict, rec.HardStateReason)
		}
		_ = w.Close()
	}
}

// A crash at every point of a hard-state update leaves the previous or the new state,
// never anything else, and never a TRUNCATED verdict.
func TestHardStateCrashAtEveryPoint(t *testing.T) {
	old, next := HardState{Term: 2, Vote: 1, Commit: 5}, HardState{Term: 3, Vote: 2, Commit: 6}
	for k := uint64(1); k <= 4; k++ { // write A, sync A, write B, sync B
		for seed := range uint64(30) {
			fs := vfs.NewMemFS(vfs.MemConfig{Seed: seed})
			opts := manual(smallOptions())
			w, _ := mustOpen(t, fs, opts)
			if err := w.SetHardState(old); err != nil {
				t.Fatal(err)
			}
			fs.CrashAtOp(fs.Ops() + k)
			err := w.SetHardState(next)
			_ = w.Close()
			fs.Restart()
			w, rec := mustOpen(t, fs, opts)
			if rec.HardStateVerdict == Truncated || (rec.HardState != old && rec.HardState != next) {
				t.Fatalf("crash at op %d seed %d: %+v %s (%s)", k, seed, rec.HardState, rec.HardStateVerdict, rec.HardStateReason)
			}
			if err == nil && rec.HardState != next {
				t.Fatalf("acknowledged hard state lost")
			}
			_ = w.Close()
		}
	}
}

// Damage to log segments does not reach the hard state: it lives in its own file.
func TestHardStateSurvivesLogDamage(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := manual(smallOptions())
	w, _ := mustOpen(t, fs, opts)
	hs := HardState{Term: 5, Vote: 3, Commit: 9}
	if err := w.SetHardState(hs); err != nil {
		t.Fatal(err)
	}
	fill(t, w, 20)
	_ = w.Close()
	for _, name := range listFiles(t, fs, prefixSegment) {
		if err := fs.FlipBit(segPath(name), 8, 0); err != nil {
			t.Fatal(err)
		}
	}
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	marked := hs
	marked.TruncatedAtTerm = hs.Term // the TRUNCATED verdict's mark (markTruncated)
	if rec.Verdict != Truncated || rec.HardStateVerdict != Clean || rec.HardState != marked {
		t.Fatalf("recovery %+v", rec)
	}
}

// TestTruncatedMarkDurableBeforeTheCut: an Open that finds the log TRUNCATED makes
// the core's mark (TruncatedAtTerm) durable before the cut, so a crash right after
// that Open, before anything else is written, boots the cut log with the mark (the
// core boots it TRUNCATED, sticky) and not CLEAN (the boot window, issue 10 item 3;
// spec -bug mark-after-cut). It fails when Open leaves the mark to the core's first
// Ready.
func TestTruncatedMarkDurableBeforeTheCut(t *testing.T) {
	for _, term := range []uint64{0, 5} {
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
		opts := manual(smallOptions())
		w, _ := mustOpen(t, fs, opts)
		if term > 0 {
			if err := w.SetHardState(HardState{Term: term, Vote: 3}); err != nil {
				t.Fatal(err)
			}
		}
		fill(t, w, 20)
		_ = w.Close()
		for _, name := range listFiles(t, fs, prefixSegment) {
			if err := fs.FlipBit(segPath(name), 8, 0); err != nil {
				t.Fatal(err)
			}
		}
		w, rec := mustOpen(t, fs, opts)
		if rec.Verdict != Truncated {
			t.Fatalf("term %d: recovery %+v", term, rec)
		}
		_ = w
		fs.Crash() // before the core's first Ready: nothing else written
		fs.Restart()
		w, rec = mustOpen(t, fs, opts)
		if want := max(term, 1); rec.HardState.TruncatedAtTerm != want {
			t.Fatalf("term %d: after a crash right after the TRUNCATED Open: verdict %s, hard state %+v, want TruncatedAtTerm %d",
				term, rec.Verdict, rec.HardState, want)
		}
		_ = w.Close()
	}
}

func TestHardStateValidation(t *testing.T) {
	_, w := openManual(t)
	if err := w.SetHardState(HardState{Term: 3, Vote: 1}); err != nil {
		t.Fatal(err)
	}
	for name, hs := range map[string]HardState{
		"term regress":        {Term: 2},
		"vote change in term": {Term: 3, Vote: 2},
		"vote cleared":        {Term: 3, Vote: 0},
	} {
		if err := w.SetHardState(hs); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	for _, hs := range []HardState{{Term: 3, Vote: 1, Commit: 4}, {Term: 4}, {Term: 4, Vote: 2, TruncatedAtTerm: 3}} {
		if err := w.SetHardState(hs); err != nil {
			t.Fatalf("%+v: %v", hs, err)
		}
		if w.HardState() != hs {
			t.Fatalf("hard state %+v, want %+v", w.HardState(), hs)
		}
	}
}

// An H8 open whose copies verify but differ (copy A one update ahead, both marked)
// rewrites both with the chosen state, so that the H5 row's promise holds after it:
// when copy A is damaged later, copy B holds the last acknowledged state, not the
// older one it held before the open.
func TestHardStateH8RewritesStaleCopy(t *testing.T) {
	a := &hardStateSlot{sequence: 5, state: HardState{Term: 3, Vote: 1}, lost: true}
	b := &hardStateSlot{sequence: 4, state: HardState{Term: 2, Vote: 2}, lost: true}
	fs := hsDisk(t, a, b, true)
	opts := manual(smallOptions())
	w, rec := mustOpen(t, fs, opts)
	if rec.HardStateReason[:2] != "H8" || rec.HardState != a.state {
		t.Fatalf("open: %+v %s (%s), want H8 with %+v", rec.HardState, rec.HardStateVerdict, rec.HardStateReason, a.state)
	}
	_ = w.Close()
	if err := fs.FlipBit(segPath(hardStateName), 8, 0); err != nil { // inside copy A
		t.Fatal(err)
	}
	w, rec = mustOpen(t, fs, opts)
	defer w.Close()
	if rec.HardState != a.state || rec.HardStateVerdict != Truncated {
		t.Fatalf("copy A damaged after the H8 open: %+v %s (%s), want %+v TRUNCATED",
			rec.HardState, rec.HardStateVerdict, rec.HardStateReason, a.state)
	}
}

// An Open that finds the log TRUNCATED and cannot make the mark durable fails: it
// does not go on to the cut with the mark unwritten (see TestTruncatedMarkDurableBeforeTheCut).
func TestTruncatedMarkWriteFailureFailsOpen(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := manual(smallOptions())
	w, _ := mustOpen(t, fs, opts)
	if err := w.SetHardState(HardState{Term: 5, Vote: 3}); err != nil {
		t.Fatal(err)
	}
	fill(t, w, 20)
	_ = w.Close()
	for _, name := range listFiles(t, fs, prefixSegment) {
		if err := fs.FlipBit(segPath(name), 8, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.FailSync(segPath(hardStateName)); err != nil {
		t.Fatal(err)
	}
	if w, _, err := Open(fs, testDir, opts); err == nil {
		_ = w.Close()
		t.Fatal("open of a TRUNCATED log succeeded although the mark's fdatasync failed")
	}
	fs.ClearFaults()
	fs.Crash()
	fs.Restart()
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	if rec.Verdict != Truncated || rec.HardState.TruncatedAtTerm != 5 {
		t.Fatalf("reopen: verdict %s, hard state %+v, want TRUNCATED with TruncatedAtTerm 5", rec.Verdict, rec.HardState)
	}
}

// A slot verifies only with its magic, known flags (the ambiguous one only with its
// mark term), zero reserved bytes and a positive sequence, each checked under a
// checksum that verifies.
func TestHardStateSlotFields(t *testing.T) {
	good := hardStateSlot{sequence: 3, state: HardState{Term: 2, Vote: 1, Commit: 4}, lost: true}
	if s, ok := decodeHardStateSlot(good.encode()); !ok || s != good {
		t.Fatalf("round trip: %+v %v", s, ok)
	}
	marked := hardStateSlot{sequence: 4, state: HardState{Term: 2, Vote: 1, Commit: 4, TruncatedAtTerm: 2, Ambiguous: true}}
	if s, ok := decodeHardStateSlot(marked.encode()); !ok || s != marked {
		t.Fatalf("round trip of the AMBIGUOUS mark: %+v %v", s, ok)
	}
	for name, edit := range map[string]func(b []byte){
		"magic":                      func(b []byte) { b[4] ^= 1 },
		"unknown flag":               func(b []byte) { b[48] |= 4 },
		"ambiguous without its term": func(b []byte) { b[48] |= 2 },
		"reserved byte":              func(b []byte) { b[hardStateSlotBytes-1] = 1 },
		"sequence zero":              func(b []byte) { clear(b[8:16]) },
	} {
		b := good.encode()
		edit(b)
		le.PutUint32(b[0:], checksum(b[4:hardStateSlotBytes]))
		if s, ok := decodeHardStateSlot(b); ok {
			t.Errorf("%s: decoded %+v", name, s)
		}
	}
}

// Copies that disagree in a way the write order cannot produce are H6 even when the
// chosen one carries the loss mark: the reason names the disagreement, not only the
// earlier loss (H8).
func TestHardStateH6Marked(t *testing.T) {
	a := &hardStateSlot{sequence: 9, state: HardState{Term: 5, Vote: 1}, lost: true}
	b := &hardStateSlot{sequence: 4, state: HardState{Term: 2, Vote: 2}, lost: true}
	fs := hsDisk(t, a, b, true)
	w, rec := mustOpen(t, fs, manual(smallOptions()))
	defer w.Close()
	if rec.HardStateReason[:2] != "H6" || rec.HardStateVerdict != Truncated || rec.HardState != a.state {
		t.Fatalf("%+v %s (%s), want H6 TRUNCATED with %+v", rec.HardState, rec.HardStateVerdict, rec.HardStateReason, a.state)
	}
}
