package kv_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/durableraft/durableraft/impl/kv"
)

// sample is a store with keys, an empty value, sessions with kept answers,
// and a clock.
func sample(t tb) *kv.Store {
	return build(t,
		kv.Put(b("a"), b("1")).At(10),
		kv.Register(1000).At(10), // session 2
		kv.Register(500).At(11),  // session 3
		kv.Put(b("b"), nil).InSession(2, 1, 1).At(12),
		kv.CASValue(b("a"), b("x"), b("2")).InSession(2, 2, 1).At(13),
		kv.Delete(b("zz")).InSession(3, 1, 1).At(14),
		kv.Put(b("c"), bytes.Repeat(b("v"), 300)).At(15),
	)
}

func TestSnapshotRoundTrip(t *testing.T) {
	st := sample(t)
	fresh := restored(t, st, 0)
	if err := fresh.Verify(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshot(t, fresh), snapshot(t, st)) {
		t.Fatal("the restored store writes another snapshot")
	}
	if fresh.ClockMs() != 15 || fresh.AppliedTerm() != 1 || fresh.Len() != 3 || fresh.SessionCount() != 2 {
		t.Fatalf("clock %d term %d keys %d sessions %d", fresh.ClockMs(), fresh.AppliedTerm(), fresh.Len(), fresh.SessionCount())
	}
	for _, id := range []uint64{2, 3} {
		a, _ := st.Session(id)
		b, _ := fresh.Session(id)
		if a != b {
			t.Fatalf("session %d: %+v restored as %+v", id, a, b)
		}
	}
	// Both go on alike: retries are answered from the restored sessions.
	for _, c := range []kv.Command{
		kv.CASValue(b("a"), b("x"), b("2")).InSession(2, 2, 1).At(16),
		kv.Put(b("b"), nil).InSession(2, 1, 1).At(17),
		kv.Noop().At(600),
		kv.Put(b("d"), b("1")).InSession(3, 2, 1),
	} {
		data, _ := c.Marshal()
		i := st.AppliedIndex() + 1
		if x, y := st.Apply(i, 2, data), fresh.Apply(i, 2, data); !bytes.Equal(x, y) {
			t.Fatalf("%v answered differently after the restore", c)
		}
	}
	if st.Hash() != fresh.Hash() {
		t.Fatal("hashes differ after the same entries")
	}
}

func TestSnapshotEmpty(t *testing.T) {
	st := kv.NewStore(kv.Options{})
	snap := snapshot(t, st)
	if len(snap) != 64+5 {
		t.Fatalf("empty snapshot of %d bytes", len(snap))
	}
	restored(t, st, 0)
}

// unchanged checks that a refused Restore left st as it was.
func unchanged(t *testing.T, st *kv.Store, before []byte, err error, what string) {
	t.Helper()
	if !errors.Is(err, kv.ErrBadSnapshot) {
		t.Fatalf("%s: error %v, want ErrBadSnapshot", what, err)
	}
	if !bytes.Equal(snapshot(t, st), before) {
		t.Fatalf("%s: a refused restore changed the store", what)
	}
}

// Every truncation and every single-bit flip of a snapshot is refused, and
// the store that refused it is unchanged.
func TestRestoreRefusesDamage(t *testing.T) {
	snap := snapshot(t, sample(t))
	target := build(t, kv.Put(b("mine"), b("1")), kv.Register(10))
	before := snapshot(t, target)
	for n := range len(snap) {
		err := target.Restore(bytes.NewReader(snap[:n]))
		unchanged(t, target, before, err, "truncated")
		if n > 0 && !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	for i := range 8 * len(snap) {
		bad := bytes.Clone(snap)
		bad[i/8] ^= 1 << (i % 8)
		unchanged(t, target, before, target.Restore(bytes.NewReader(bad)), "bit flip")
	}
	unchanged(t, target, before, target.Restore(bytes.NewReader(append(bytes.Clone(snap), 0))), "trailing byte")
	if err := target.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatalf("the undamaged snapshot: %v", err)
	}
}

// reseal recomputes the trailer's CRC after a test patched the snapshot, so
// that the check under test, not the checksum, refuses it.
func reseal(snap []byte) []byte {
	binary.LittleEndian.PutUint32(snap[len(snap)-4:], crc32.Checksum(snap[:len(snap)-4], crc32.MakeTable(crc32.Castagnoli)))
	return snap
}

// The checks behind the checksum: a stream whose CRC is right but whose
// content breaks a rule, one row per rule.
func TestRestoreRefusesInconsistent(t *testing.T) {
	// Layout of the sample (docs/kv.md): header 64 bytes; key "a" at 64
	// (17+1+1 bytes), "b" at 83 (17+1), "c" at 101 (17+1+300); session 2
	// at 419 (37 + 2*25), session 3 at 506 (37 + 25); trailer at 568.
	snap := snapshot(t, sample(t))
	if len(snap) != 573 || snap[64] != 'K' || snap[419] != 'S' || snap[506] != 'S' || snap[568] != 'E' {
		t.Fatalf("layout changed: %d bytes", len(snap))
	}
	put64 := func(at int, v uint64) func([]byte) {
		return func(s []byte) { binary.LittleEndian.PutUint64(s[at:], v) }
	}
	put32 := func(at int, v uint32) func([]byte) {
		return func(s []byte) { binary.LittleEndian.PutUint32(s[at:], v) }
	}
	cases := []struct {
		name  string
		patch func([]byte)
		msg   string
	}{
		{"magic", func(s []byte) { s[0] = 'X' }, "not a version-2 KV snapshot"},
		{"version", put32(8, 1), "not a version-2 KV snapshot"},
		{"reserved", put32(12, 1), "not a version-2 KV snapshot"},
		{"applied index over 2^62", put64(16, 1<<63), "over 2^62"},
		{"more keys than indexes", put64(40, 1000), "keys and"},
		{"sessions over the limit", put64(48, kv.SessionsMax+1), "sessions at applied index"},
		{"one key fewer declared", put64(40, 2), "session record at byte 101: tag 'K'"},
		{"one key more declared", put64(40, 4), "key record at byte 419"},
		{"a key record's tag", func(s []byte) { s[64] = 'S' }, "key record at byte 64: tag 'S'"},
		{"a key too long", put32(65, kv.KeyBytesMax+1), "4097-byte key"},
		{"an empty key", put32(65, 0), "0-byte key"},
		{"a value too long", put32(69, kv.ValueBytesMax+1), "262145-byte value"},
		{"revision 0", put64(73, 0), "revision 0"},
		{"revision above the applied index", put64(73, 8), "revision 8"},
		{"keys out of order", func(s []byte) { s[100] = 'a' }, "keys out of order"},
		{"a value byte (the hash)", func(s []byte) { s[82] = '9' }, "state hashes to"},
		{"the header's hash", func(s []byte) { s[56] ^= 1 }, "state hashes to"},
		{"a session id above the applied index", put64(420, 9), "id 9"},
		{"sessions out of order", put64(507, 2), "id 2 after 2"},
		{"a session timeout 0", put64(428, 0), "timeout 0"},
		{"a session active after the clock", put64(436, 16), "last active 16"},
		{"a session already expired", put64(428, 1), "expired (deadline 14) before the clock 15"},
		{"a session's lowest unacked 0", put64(444, 0), "lowest unacked 0"},
		{"too many responses", put32(452, kv.SessionWindowMax+1), "1025 responses"},
		{"responses out of order", put64(481, 1), "response 1"},
		{"a response below the lowest unacked", put64(444, 2), "response 0"},
		{"a response beyond the window", put64(481, kv.SessionWindowMax+1), "response 1"},
		{"a response with a refusal code", func(s []byte) { s[464] = byte(kv.CodeStale) }, "response 0"},
		{"a response from before its session", put64(465, 2), "response 0"},
		{"a response from the future", put64(465, 8), "response 0"},
		{"a response's ok revision", put64(473, 3), "response 0"},
		{"the trailer's tag", func(s []byte) { s[568] = 'X' }, "trailer tag"},
	}
	target := build(t, kv.Put(b("mine"), b("1")))
	before := snapshot(t, target)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(snap)
			tc.patch(bad)
			err := target.Restore(bytes.NewReader(reseal(bad)))
			unchanged(t, target, before, err, tc.name)
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q, want it to say %q", err, tc.msg)
			}
		})
	}
}

var errDisk = errors.New("disk on fire")

// A failing reader or writer is reported, wrapped.
func TestSnapshotIOErrors(t *testing.T) {
	st := sample(t)
	snap := snapshot(t, st)
	if err := kv.NewStore(kv.Options{}).Restore(iotest.OneByteReader(bytes.NewReader(snap))); err != nil {
		t.Fatalf("one byte at a time: %v", err)
	}
	target := kv.NewStore(kv.Options{})
	err := target.Restore(io.MultiReader(bytes.NewReader(snap[:100]), iotest.ErrReader(errDisk)))
	if !errors.Is(err, errDisk) || !errors.Is(err, kv.ErrBadSnapshot) || target.AppliedIndex() != 0 {
		t.Fatalf("reader error: %v", err)
	}
	for _, n := range []int{0, 10, len(snap) - 1} {
		if err := st.Snapshot(&failingWriter{left: n}); !errors.Is(err, errDisk) {
			t.Fatalf("writer failing after %d bytes: %v", n, err)
		}
	}
}

type failingWriter struct{ left int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, errDisk
	}
	w.left -= len(p)
	return len(p), nil
}

// maxWriter records the largest single write.
type maxWriter struct{ n, max int }

func (w *maxWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	w.max = max(w.max, len(p))
	return len(p), nil
}

// A snapshot streams: it hands the writer at most 64 KiB at a time and
// allocates a small fraction of its size (the sorted key list and a
// buffer), however large the state.
func TestSnapshotStreams(t *testing.T) {
	st := kv.NewStore(kv.Options{})
	value := bytes.Repeat(b("v"), 2000)
	for i := range 5000 {
		st.ApplyCommand(uint64(i)+1, 1, kv.Put([]byte(strings.Repeat("k", 1+i%7)+itoa(uint64(i))), value))
	}
	w := &maxWriter{}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	if err := st.Snapshot(w); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	alloc := m1.TotalAlloc - m0.TotalAlloc
	if w.max > 64<<10 || alloc > uint64(w.n)/20 {
		t.Fatalf("snapshot of %d bytes: largest write %d, allocated %d bytes", w.n, w.max, alloc)
	}
	t.Logf("snapshot of %d bytes: largest write %d bytes, %d bytes allocated (%.1f%%)", w.n, w.max, alloc, 100*float64(alloc)/float64(w.n))
}

// TestCloneIsIndependent: a clone writes the snapshot of the state it was
// taken at while the original goes on applying (the overwrite of a key,
// a delete, answers kept in a session, a session expiring), and verifies;
// the original's changes never reach it, nor its reach the original.
func TestCloneIsIndependent(t *testing.T) {
	st := sample(t)
	before := snapshot(t, st)
	c := st.Clone()
	for _, cmd := range []kv.Command{
		kv.Put(b("a"), b("changed")).InSession(2, 3, 1).At(20),
		kv.Delete(b("b")).At(21),
		kv.Put(b("new"), b("1")).InSession(3, 2, 1).At(22),
		kv.Noop().At(5000), // both sessions expire
	} {
		data, _ := cmd.Marshal()
		st.Apply(st.AppliedIndex()+1, 2, data)
	}
	if err := c.Verify(); err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshot(t, c), before) {
		t.Fatal("the clone's snapshot is not the state it was taken at")
	}
	if st.SessionCount() != 0 || c.SessionCount() != 2 {
		t.Fatalf("sessions: original %d, clone %d", st.SessionCount(), c.SessionCount())
	}
	after := snapshot(t, st)
	data, _ := kv.Put(b("a"), b("clone")).At(30).Marshal()
	c.Apply(c.AppliedIndex()+1, 3, data)
	if !bytes.Equal(snapshot(t, st), after) {
		t.Fatal("applying to the clone changed the original")
	}
}

// TestRestoreAt: a snapshot of another index or term is refused with
// ErrBadSnapshot and changes nothing; the right one restores.
func TestRestoreAt(t *testing.T) {
	src := sample(t)
	snap := snapshot(t, src)
	st := kv.NewStore(kv.Options{})
	before := snapshot(t, st)
	i, term := src.AppliedIndex(), src.AppliedTerm()
	for _, at := range [][2]uint64{{i + 1, term}, {i - 1, term}, {i, term + 1}} {
		err := st.RestoreAt(bytes.NewReader(snap), at[0], at[1])
		unchanged(t, st, before, err, "another index or term")
	}
	if err := st.RestoreAt(bytes.NewReader(snap), i, term); err != nil {
		t.Fatal(err)
	}
	if st.Hash() != src.Hash() {
		t.Fatal("restored another state")
	}
}
