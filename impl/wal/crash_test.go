package wal

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

var debugSteps = os.Getenv("WALDEBUG") != ""

// crashSeeds is the number of seeds TestCrashAtEveryPoint runs; raise it for a soak:
// go test -run CrashAtEvery -args -crashseeds=2000
var crashSeeds = flag.Int("crashseeds", 24, "seeds for TestCrashAtEveryPoint")

func debugFiles(w *WAL) []string {
	names, _ := w.fs.List(w.dir)
	return names
}

// version is one entry appended at an index. dead: a truncation or reset that removed
// it is durable (its ticket was covered), so it must never come back.
type version struct {
	e    Entry
	dead bool
}

// removal is a truncation or reset whose durability the model waits for.
type removal struct {
	ticket  uint64
	removed []*version
}

// model is what a workload told the WAL and what the WAL reported durable.
type model struct {
	entries map[uint64]*version // the current log
	last    uint64
	// base is the last Reset's index: no entry at or below it exists in the model.
	base uint64
	// compacted is the highest index passed to a compaction (or Reset).
	compacted uint64
	// durable is the durable index last reported; truncation and reset clamp it.
	durable uint64
	// versions holds every entry ever appended at an index.
	versions map[uint64][]*version
	removals []removal
	term     uint64
	version  int
	// hsAcked is the last hard state reported durable; hsSubmitted the ones submitted
	// after it, in order.
	hsAcked     HardState
	hsSubmitted []HardState
	clock       *fakeClock
}

func newModel() *model {
	return &model{entries: map[uint64]*version{}, versions: map[uint64][]*version{}, term: 1}
}

// step performs one random operation on a stepped WAL (a submission, a step, a
// blocking call, or time passing) and returns the WAL's error (a crash of the disk
// shows up here). Whatever happened, it then reads the Progress and holds it to the
// model: a durable index, Synced or hard state published before an fdatasync that
// then failed is seen here and checked at recovery.
func (m *model) step(t testing.TB, rng *rand.Rand, w *WAL) error {
	t.Helper()
	var err error
	clamped := false
	defer func() {
		if debugSteps {
			t.Logf("step -> err %v progress %+v first %d last %d | model last %d base %d compacted %d durable %d | %v",
				err, w.Progress(), w.FirstIndex(), w.LastIndex(), m.last, m.base, m.compacted, m.durable, debugFiles(w))
		}
	}()
	switch r := rng.IntN(100); {
	case r < 30:
		err = m.appendSome(rng, w)
	case r < 58:
		if k := w.NextStep(); k == StepNone {
			m.clock.Advance(time.Duration(rng.IntN(4)) * time.Millisecond)
		} else {
			active, detached := w.activeAndDetached()
			err = w.Step()
			crashMarks["step "+k.String()]++
			if a, d := w.activeAndDetached(); a != active {
				crashMarks["segment started"]++
			} else if d < detached {
				crashMarks["compacted segments released"]++
			}
		}
	case r < 62:
		m.clock.Advance(time.Duration(rng.IntN(8)) * time.Millisecond)
	case r < 65:
		w.SubmitSync()
	case r < 68:
		err = w.Sync(context.Background())
	case r < 76:
		if m.last > m.base && m.last >= w.FirstIndex() {
			first := w.FirstIndex()
			from := first + rng.Uint64N(m.last-first+1)
			if err = w.TruncateSuffix(from); err == nil {
				var removed []*version
				for i := from; i <= m.last; i++ {
					removed = append(removed, m.entries[i])
					delete(m.entries, i)
				}
				m.removals = append(m.removals, removal{w.SubmitSync(), removed})
				m.last = from - 1
				clamped = true
			}
		}
	case r < 81:
		through := rng.Uint64N(w.DurableIndex() + 1)
		if rng.IntN(2) == 0 {
			_, err = w.SubmitCompact(through)
		} else {
			err = w.CompactPrefix(through)
		}
		m.compacted = max(m.compacted, through) // even on error: removals may have happened
	case r < 94:
		err = m.hardState(rng, w)
	default:
		index := w.LastIndex() + rng.Uint64N(4)
		if err = w.Reset(index, m.term); err == nil {
			var removed []*version
			for _, v := range m.entries {
				removed = append(removed, v)
			}
			m.removals = append(m.removals, removal{w.SubmitSync(), removed})
			m.entries = map[uint64]*version{}
			m.last, m.base = index, index
			m.compacted = max(m.compacted, index)
			clamped = true
		}
	}
	if err == nil {
		err = w.Err()
	}
	m.observe(t, w, clamped)
	return err
}

func (m *model) appendSome(rng *rand.Rand, w *WAL) error {
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
	if rng.IntN(3) == 0 { // as a follower would: records shipped from a leader
		prev, err := w.Checksum(m.last)
		if err != nil {
			return err
		}
		recs := make([]Record, n)
		for i, e := range ents {
			recs[i], prev = EncodeRecord(prev, e)
		}
		if err := w.AppendRecords(recs); err != nil {
			return err
		}
	} else if err := w.Append(ents); err != nil {
		return err
	}
	for _, e := range ents {
		v := &version{e: e}
		m.entries[e.Index] = v
		m.versions[e.Index] = append(m.versions[e.Index], v)
	}
	m.last += uint64(n)
	return nil
}

func (m *model) hardState(rng *rand.Rand, w *WAL) error {
	hs := m.hsAcked
	if n := len(m.hsSubmitted); n > 0 {
		hs = m.hsSubmitted[n-1]
	}
	if rng.IntN(2) == 0 {
		hs.Term++
		hs.Vote = rng.Uint64N(4)
	} else if hs.Vote == 0 {
		hs.Vote = 1 + rng.Uint64N(3)
	}
	hs.Commit = rng.Uint64N(m.last + 1)
	m.hsSubmitted = append(m.hsSubmitted, hs)
	if rng.IntN(2) == 0 {
		_, err := w.SubmitHardState(hs)
		return err
	}
	return w.SetHardState(hs)
}

// observe holds what the WAL reports now to the model, and learns it.
func (m *model) observe(t testing.TB, w *WAL, clamped bool) {
	t.Helper()
	p := w.Progress()
	if p.DurableIndex < m.durable && !clamped {
		t.Fatalf("durable index went from %d to %d without a truncation or reset", m.durable, p.DurableIndex)
	}
	m.durable = p.DurableIndex
	if d := p.DurableIndex; d > m.base && d <= m.last && m.entries[d].e.Term != p.DurableTerm {
		t.Fatalf("durable index %d reported with term %d, the entry there has term %d", d, p.DurableTerm, m.entries[d].e.Term)
	}
	if p.HardState != m.hsAcked {
		i := slices.Index(m.hsSubmitted, p.HardState)
		if i < 0 {
			t.Fatalf("durable hard state %+v was never submitted (acked %+v, submitted %+v)", p.HardState, m.hsAcked, m.hsSubmitted)
		}
		m.hsAcked, m.hsSubmitted = p.HardState, m.hsSubmitted[i+1:]
		crashMarks["hard state durable"]++
	}
	kept := m.removals[:0]
	for _, r := range m.removals {
		if r.ticket > p.Synced {
			kept = append(kept, r)
			continue
		}
		for _, v := range r.removed {
			v.dead = true
		}
	}
	m.removals = kept
}

// check verifies a recovered WAL against the model: every index reported durable is
// there intact, everything there was once appended and not durably removed, the hard
// state is the acknowledged one or one submitted after it, and the verdicts are not
// TRUNCATED.
func (m *model) check(t testing.TB, w *WAL, rec *Recovery, where string) {
	t.Helper()
	if rec.Verdict == Truncated || rec.HardStateVerdict == Truncated {
		t.Fatalf("%s: verdict %s (%s: %s), hard state %s (%s) on a disk with no corruption",
			where, rec.Verdict, rec.Case, rec.Reason, rec.HardStateVerdict, rec.HardStateReason)
	}
	// An AMBIGUOUS recovery (a torn last batch: R6) marks the hard state before its
	// cut is durable; a crash after the mark leaves it for the next Open, whose log
	// may be clean.
	known := func(hs HardState) bool { return hs == m.hsAcked || slices.Contains(m.hsSubmitted, hs) }
	marked := func(hs HardState) bool {
		return hs.Ambiguous && hs.TruncatedAtTerm == max(hs.Term, 1) && known(HardState{Term: hs.Term, Vote: hs.Vote, Commit: hs.Commit})
	}
	if !known(rec.HardState) && !marked(rec.HardState) {
		t.Fatalf("%s: hard state %+v, acknowledged %+v, submitted since %+v", where, rec.HardState, m.hsAcked, m.hsSubmitted)
	}
	if rec.Verdict == Ambiguous && !rec.HardState.Ambiguous {
		t.Fatalf("%s: verdict AMBIGUOUS (%s) without the mark: hard state %+v", where, rec.Reason, rec.HardState)
	}
	first, last := w.FirstIndex(), w.LastIndex()
	if last < m.durable && m.durable > m.base {
		t.Fatalf("%s: recovered last index %d below reported durable index %d (%s: %s)", where, last, m.durable, rec.Case, rec.Reason)
	}
	if p := w.Progress(); p.DurableIndex != last || rec.DurableIndex != last {
		t.Fatalf("%s: durable index %d / %d after open, last index %d", where, p.DurableIndex, rec.DurableIndex, last)
	}
	for i := m.base + 1; i <= m.durable; i++ {
		if i < first {
			if i > m.compacted {
				t.Fatalf("%s: durable index %d lost below first index %d (compacted through %d)", where, i, first, m.compacted)
			}
			continue
		}
		got := mustEntries(t, w, i, i+1)[0]
		if want := m.entries[i].e; got.Term != want.Term || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("%s: durable entry %d is %d/%q, want %d/%q", where, i, got.Term, got.Data, want.Term, want.Data)
		}
	}
	if first > last {
		return
	}
	for _, got := range mustEntries(t, w, first, last+1) {
		i := slices.IndexFunc(m.versions[got.Index], func(v *version) bool {
			return v.e.Term == got.Term && bytes.Equal(v.e.Data, got.Data)
		})
		if i < 0 {
			t.Fatalf("%s: recovered entry %d %d/%q was never appended", where, got.Index, got.Term, got.Data)
		}
		if m.versions[got.Index][i].dead {
			t.Fatalf("%s: recovered entry %d %d/%q was removed by a truncation or reset reported durable", where, got.Index, got.Term, got.Data)
		}
	}
}

// resync makes the model follow the recovered log for the next life.
func (m *model) resync(t testing.TB, w *WAL, rec *Recovery) {
	m.entries = map[uint64]*version{}
	first, last := w.FirstIndex(), w.LastIndex()
	if first <= last {
		for _, e := range mustEntries(t, w, first, last+1) {
			i := slices.IndexFunc(m.versions[e.Index], func(v *version) bool { return v.e.Term == e.Term && bytes.Equal(v.e.Data, e.Data) })
			m.entries[e.Index] = m.versions[e.Index][i]
		}
	}
	m.last, m.base, m.compacted, m.durable = last, first-1, first-1, last
	m.hsAcked, m.hsSubmitted, m.removals = rec.HardState, nil, nil
	if last >= first {
		term, _ := w.Term(last)
		m.term = max(m.term, term)
	}
}

// life opens the WAL and runs steps until the disk crashes or steps run out. It
// returns the WAL (nil if Open itself crashed).
func life(t testing.TB, fs *vfs.MemFS, m *model, rng *rand.Rand, steps int, opts Options) (*WAL, bool) {
	t.Helper()
	m.clock = opts.Clock.(*fakeClock)
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

func recoverAndCheck(t testing.TB, fs *vfs.MemFS, m *model, opts Options, where string) (*WAL, *Recovery) {
	t.Helper()
	fs.Restart()
	w, rec := mustOpen(t, fs, opts)
	m.check(t, w, rec, where)
	return w, rec
}

// crashOptions are the stepped options of the crash workloads: idle seals and, for
// odd seeds, a sync delay on the virtual clock.
func crashOptions(seed uint64, bugs walBug) Options {
	o := manual(smallOptions())
	o.SealDelay = 5 * time.Millisecond
	o.SyncDelay = time.Duration(seed%2) * 2 * time.Millisecond
	o.bugs = bugs
	return o
}

// crashMarks counts what the crash workloads reached, so that a workload that no
// longer reaches a kind of step fails instead of passing without testing it.
var crashMarks = map[string]int{}

func (w *WAL) activeAndDetached() (*segment, int) {
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active, len(w.detached)
}

// TestCrashAtEveryPoint runs a seeded workload on a stepped WAL (appends, steps,
// syncs, seals, truncations, compactions, hard-state writes, resets, time passing) and
// crashes the disk at every one of its mutating operations in turn: inside every
// write, fdatasync, segment creation, rotation, hard-state slot write and release.
// Then it recovers, checks, runs a second life that crashes at a random point, and
// recovers and checks again. Crashes lose, keep, split or tear every unsynced write as
// the disk's seed decides.
func TestCrashAtEveryPoint(t *testing.T) {
	seeds := *crashSeeds
	if testing.Short() {
		seeds = min(seeds, 6)
	}
	clear(crashMarks)
	runs := crashAtEveryPoint(t, seeds, 0)
	t.Logf("%d crash points over %d seeds; reached %v", runs, seeds, crashMarks)
	for _, mark := range []string{"step write", "step sync", "step publish", "step seal", "step prepare",
		"segment started", "compacted segments released", "hard state durable"} {
		if crashMarks[mark] == 0 {
			t.Errorf("the workload never reached %q", mark)
		}
	}
}

func crashAtEveryPoint(t testing.TB, seeds int, bugs walBug) int {
	steps, runs := 40, 0
	for seed := range uint64(seeds) {
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: seed})
		w, crashed := life(t, fs, newModel(), newRand(seed), steps, crashOptions(seed, bugs))
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
			opts := crashOptions(seed, bugs)
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
	return runs
}
