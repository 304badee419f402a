package wal

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

var debugSteps = false

// crashSeeds is the number of seeds TestCrashAtEveryPoint runs; raise it for a soak:
// go test -run CrashAtEvery -args -crashseeds=2000
var crashSeeds = flag.Int("crashseeds", 24, "seeds for TestCrashAtEveryPoint")

func debugFiles(w *WAL) []string {
	names, _ := w.fs.List(w.dir)
	return names
}

// model is what a workload told the WAL and what the WAL reported durable.
type model struct {
	entries map[uint64]Entry // the current log
	last    uint64
	// base is the last Reset's index: no entry at or below it exists in the model.
	base uint64
	// compacted is the highest index passed to a successful CompactPrefix (or Reset).
	compacted uint64
	// durable is the durable index last reported; truncation and reset clamp it.
	durable uint64
	// versions holds every entry ever appended at an index.
	versions  map[uint64][]Entry
	term      uint64
	version   int
	hs        HardState
	hsPending *HardState // a SetHardState that did not return
}

func newModel() *model {
	return &model{entries: map[uint64]Entry{}, versions: map[uint64][]Entry{}, term: 1}
}

// step performs one random operation on a manual-flush WAL and returns the WAL's error
// (a crash of the disk shows up here).
func (m *model) step(t *testing.T, rng *rand.Rand, w *WAL) error {
	t.Helper()
	var err error
	defer func() {
		if debugSteps {
			t.Logf("step -> err %v durable %d first %d last %d | model last %d base %d compacted %d durable %d | %v",
				err, w.DurableIndex(), w.FirstIndex(), w.LastIndex(), m.last, m.base, m.compacted, m.durable, debugFiles(w))
		}
	}()
	switch r := rng.IntN(100); {
	case r < 45:
		n := 1 + rng.IntN(5)
		if rng.IntN(8) == 0 {
			m.term++
		}
		ents := make([]Entry, n)
		for i := range ents {
			idx := m.last + 1 + uint64(i)
			m.version++
			ents[i] = Entry{Index: idx, Term: m.term, Data: payload(idx, m.term, m.version, rng.IntN(300))}
		}
		if err = w.Append(ents); err == nil {
			for _, e := range ents {
				m.entries[e.Index] = e
				m.versions[e.Index] = append(m.versions[e.Index], e)
			}
			m.last += uint64(n)
		}
	case r < 70:
		w.flushOnce()
	case r < 74:
		w.sealIfNeeded()
	case r < 82:
		if m.last > m.base && m.last >= w.FirstIndex() {
			first := w.FirstIndex()
			from := first + rng.Uint64N(m.last-first+1)
			if err = w.TruncateSuffix(from); err == nil {
				for i := from; i <= m.last; i++ {
					delete(m.entries, i)
				}
				m.last = from - 1
				m.durable = min(m.durable, from-1)
			}
		}
	case r < 87:
		through := rng.Uint64N(w.DurableIndex() + 1)
		err = w.CompactPrefix(through)
		m.compacted = max(m.compacted, through) // even on error: removals may have happened

	case r < 96:
		hs := m.hs
		if rng.IntN(2) == 0 {
			hs.Term++
			hs.Vote = rng.Uint64N(4)
		} else if hs.Vote == 0 {
			hs.Vote = 1 + rng.Uint64N(3)
		}
		hs.Commit = rng.Uint64N(m.last + 1)
		m.hsPending = &hs
		if err = w.SetHardState(hs); err == nil {
			m.hs, m.hsPending = hs, nil
		}
	default:
		index := w.LastIndex() + rng.Uint64N(4)
		if err = w.Reset(index, m.term); err == nil {
			m.entries = map[uint64]Entry{}
			m.last, m.base = index, index
			m.compacted = max(m.compacted, index)
			m.durable = min(m.durable, index)
		}
	}
	if err == nil {
		err = w.Err()
	}
	if err != nil {
		return err
	}
	d := w.DurableIndex()
	if d < m.durable {
		t.Fatalf("durable index went from %d to %d without a truncation", m.durable, d)
	}
	m.durable = d
	return nil
}

// check verifies a recovered WAL against the model: every index reported durable is
// there intact, everything there was once appended, and the verdicts are not TRUNCATED.
func (m *model) check(t *testing.T, w *WAL, rec *Recovery, where string) {
	t.Helper()
	if rec.Verdict == Truncated || rec.HardStateVerdict == Truncated {
		t.Fatalf("%s: verdict %s (%s: %s), hard state %s (%s) on a disk with no corruption",
			where, rec.Verdict, rec.Case, rec.Reason, rec.HardStateVerdict, rec.HardStateReason)
	}
	if rec.HardState != m.hs && (m.hsPending == nil || rec.HardState != *m.hsPending) {
		t.Fatalf("%s: hard state %+v, acknowledged %+v, in flight %+v", where, rec.HardState, m.hs, m.hsPending)
	}
	first, last := w.FirstIndex(), w.LastIndex()
	if last < m.durable && m.durable > m.base {
		t.Fatalf("%s: recovered last index %d below reported durable index %d (%s: %s)", where, last, m.durable, rec.Case, rec.Reason)
	}
	if w.DurableIndex() != last || rec.DurableIndex != last {
		t.Fatalf("%s: durable index %d / %d after open, last index %d", where, w.DurableIndex(), rec.DurableIndex, last)
	}
	for i := m.base + 1; i <= m.durable; i++ {
		if i < first {
			if i > m.compacted {
				t.Fatalf("%s: durable index %d lost below first index %d (compacted through %d)", where, i, first, m.compacted)
			}
			continue
		}
		got := mustEntries(t, w, i, i+1)[0]
		if want := m.entries[i]; got.Term != want.Term || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("%s: durable entry %d is %d/%q, want %d/%q", where, i, got.Term, got.Data, want.Term, want.Data)
		}
	}
	if first > last {
		return
	}
	for _, got := range mustEntries(t, w, first, last+1) {
		found := false
		for _, v := range m.versions[got.Index] {
			found = found || (v.Term == got.Term && bytes.Equal(v.Data, got.Data))
		}
		if !found {
			t.Fatalf("%s: recovered entry %d %d/%q was never appended", where, got.Index, got.Term, got.Data)
		}
	}
}

// resync makes the model follow the recovered log for the next life.
func (m *model) resync(t *testing.T, w *WAL, rec *Recovery) {
	m.entries = map[uint64]Entry{}
	first, last := w.FirstIndex(), w.LastIndex()
	if first <= last {
		for _, e := range mustEntries(t, w, first, last+1) {
			m.entries[e.Index] = e
		}
	}
	m.last, m.base, m.compacted, m.durable = last, first-1, first-1, last
	m.hs, m.hsPending = rec.HardState, nil
	if last >= first {
		term, _ := w.Term(last)
		m.term = max(m.term, term)
	}
}

// life opens the WAL and runs steps until the disk crashes or steps run out. It
// returns the WAL (nil if Open itself crashed).
func life(t *testing.T, fs *vfs.MemFS, m *model, rng *rand.Rand, steps int, opts Options) (*WAL, bool) {
	t.Helper()
	w, rec, err := Open(fs, testDir, opts)
	if err != nil {
		if !errors.Is(err, vfs.ErrCrashed) {
			t.Fatalf("open: %v", err)
		}
		return nil, true
	}
	m.check(t, w, rec, "open before the workload")
	m.resync(t, w, rec)
	for range steps {
		if err := m.step(t, rng, w); err != nil {
			if !errors.Is(err, vfs.ErrCrashed) {
				t.Fatalf("step: %v", err)
			}
			return w, true
		}
	}
	return w, false
}

func recoverAndCheck(t *testing.T, fs *vfs.MemFS, m *model, opts Options, where string) (*WAL, *Recovery) {
	t.Helper()
	fs.Restart()
	w, rec := mustOpen(t, fs, opts)
	m.check(t, w, rec, where)
	return w, rec
}

// TestCrashAtEveryPoint runs a seeded workload (appends, flushes, seals, truncations,
// compactions, hard-state writes, resets) and crashes the disk at every one of its
// mutating operations in turn; then recovers, checks, runs a second life that crashes
// at a random point, and recovers and checks again. Crashes lose, keep, split or tear
// every unsynced write as the disk's seed decides.
func TestCrashAtEveryPoint(t *testing.T) {
	seeds, steps := *crashSeeds, 40
	if testing.Short() {
		seeds = min(seeds, 6)
	}
	opts := manual(smallOptions())
	runs := 0
	for seed := range uint64(seeds) {
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: seed})
		w, crashed := life(t, fs, newModel(), newRand(seed), steps, opts)
		if crashed {
			t.Fatal("crashed without a scheduled crash")
		}
		_ = w.Close()
		total := fs.Ops()
		for k := uint64(1); k <= total; k++ {
			runs++
			where := fmt.Sprintf("seed %d crash at op %d of %d", seed, k, total)
			fs := vfs.NewMemFS(vfs.MemConfig{Seed: seed*7919 + k})
			fs.CrashAtOp(k)
			m := newModel()
			w, _ := life(t, fs, m, newRand(seed), steps, opts)
			if w != nil {
				_ = w.Close() // the crash may come here, in the final flush or seal
			}
			if fs.Ops() < k {
				t.Fatalf("%s: no crash", where)
			}
			w, _ = recoverAndCheck(t, fs, m, opts, where)
			_ = w.Close()
			// Second life, crashing at a random later point (or at its end).
			rng := newRand(seed*1000 + k)
			fs.CrashAtOp(fs.Ops() + 1 + rng.Uint64N(80))
			w, crashed := life(t, fs, m, rng, steps, opts)
			fs.CrashAtOp(0)
			if !crashed {
				fs.Crash()
			}
			if w != nil {
				_ = w.Close()
			}
			w, _ = recoverAndCheck(t, fs, m, opts, where+", second life")
			_ = w.Close()
		}
	}
	t.Logf("%d crash points over %d seeds", runs, seeds)
}
