package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal/vfs"
	"github.com/durableraft/durableraft/trace"
)

func testMeta(index uint64, traced bool) SnapshotMeta {
	m := SnapshotMeta{Index: index, Term: 3, Chain: 0xdeadbeef, Voters: []raft.NodeID{1, 2, 5}, BlockBytes: 64}
	if traced {
		for i := uint64(1); i <= index; i++ {
			m.TracePrefix = append(m.TracePrefix, trace.Entry{Term: int(1 + i/4), Value: int(1 + i%4)})
		}
	}
	return m
}

// writeSnapFile writes a snapshot file of body under meta and returns its bytes.
func writeSnapFile(t testing.TB, fs *vfs.MemFS, name string, meta SnapshotMeta, body []byte) []byte {
	t.Helper()
	hdr, err := encodeSnapHeader(&meta)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := newSnapWriter(f, hdr, meta.BlockBytes)
	// Odd write sizes: the writer cuts blocks itself.
	for p := body; len(p) > 0; {
		k := min(len(p), 1+len(p)%37)
		if _, err := w.Write(p[:k]); err != nil {
			t.Fatal(err)
		}
		p = p[k:]
	}
	if _, err := w.finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := fs.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readSnapBody(fs vfs.FS, name string) (SnapshotMeta, []byte, error) {
	var body []byte
	meta, err := snapStore{fs: fs, dir: "/"}.restore(name[1:], func(r io.Reader, _ SnapshotMeta) error {
		b, err := io.ReadAll(r)
		body = b
		return err
	})
	return meta, body, err
}

// TestSnapshotFileRoundTrip: what is written reads back, for bodies around
// the block boundaries, with and without a trace prefix.
func TestSnapshotFileRoundTrip(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	for _, n := range []int{0, 1, 63, 64, 65, 200, 1000} {
		for _, traced := range []bool{false, true} {
			body := bytes.Repeat([]byte{byte(n), 7, 9}, n)[:n]
			meta := testMeta(uint64(10+n), traced)
			writeSnapFile(t, fs, "/s", meta, body)
			got, gotBody, err := readSnapBody(fs, "/s")
			if err != nil {
				t.Fatalf("%d bytes, traced %v: %v", n, traced, err)
			}
			if !bytes.Equal(gotBody, body) || got.Index != meta.Index || got.Chain != meta.Chain || len(got.TracePrefix) != len(meta.TracePrefix) {
				t.Fatalf("%d bytes, traced %v: read back %+v, %d bytes", n, traced, got, len(gotBody))
			}
			for k := range meta.TracePrefix {
				if got.TracePrefix[k] != meta.TracePrefix[k] {
					t.Fatalf("trace prefix differs at %d", k)
				}
			}
		}
	}
}

func metaWithMembership(index uint64) SnapshotMeta {
	m := testMeta(index, true)
	m.Membership = &raft.Membership{Voters: m.Voters, Learners: []raft.NodeID{7}, Removed: []raft.NodeID{3}}
	return m
}

// TestSnapshotFileMembership: the configuration a snapshot records reads
// back; one whose voters differ from the header's, or that does not
// verify, is refused at write and at read.
func TestSnapshotFileMembership(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	meta := metaWithMembership(12)
	writeSnapFile(t, fs, "/s", meta, []byte("state"))
	got, _, err := readSnapBody(fs, "/s")
	if err != nil || got.Membership == nil || got.Membership.String() != meta.Membership.String() {
		t.Fatalf("read back %+v, %v", got.Membership, err)
	}
	bad := meta
	bad.Membership = &raft.Membership{Voters: []raft.NodeID{1, 2}}
	if _, err := encodeSnapHeader(&bad); err == nil {
		t.Fatal("a configuration whose voters differ from the header's was written")
	}
	hdr, err := encodeSnapHeader(&meta)
	if err != nil {
		t.Fatal(err)
	}
	// The configuration's last id byte (the removed 3) made a voter's 1: the
	// checksum is recomputed, so only the configuration's own checks stand.
	k := bytes.Index(hdr, raft.EncodeMembership(*meta.Membership))
	hdr[k+len(raft.EncodeMembership(*meta.Membership))-1] = 1
	binary.LittleEndian.PutUint32(hdr[0:], crc32.Checksum(hdr[4:], snapCastagnoli))
	if _, err := decodeSnapHeader(hdr); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatalf("a header with an invalid configuration: %v", err)
	}
}

// TestSnapshotFileRefusesDamage: every single-bit flip anywhere in a file,
// and every truncation, is refused with ErrSnapshotCorrupt, both by the
// whole-file check and by the stream a restore reads, which hands out no
// byte of a damaged block.
func TestSnapshotFileRefusesDamage(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 2})
	body := bytes.Repeat([]byte("abcdefghij"), 23)
	good := writeSnapFile(t, fs, "/good", testMeta(7, true), body)
	check := func(what string, img []byte) {
		t.Helper()
		if err := fs.WriteFile("/bad", img); err != nil {
			t.Fatal(err)
		}
		f, err := fs.Open("/bad")
		if err != nil {
			t.Fatal(err)
		}
		_, verr := verifySnap(f)
		_ = f.Close()
		_, got, rerr := readSnapBody(fs, "/bad")
		if !errors.Is(verr, ErrSnapshotCorrupt) || !errors.Is(rerr, ErrSnapshotCorrupt) {
			t.Fatalf("%s: verify %v, restore %v", what, verr, rerr)
		}
		if !bytes.Equal(got, body[:len(got)]) {
			t.Fatalf("%s: the restore stream handed out damaged bytes", what)
		}
	}
	for bit := 0; bit < 8*len(good); bit++ {
		img := bytes.Clone(good)
		img[bit/8] ^= 1 << (bit % 8)
		check("flip of bit "+itoa(bit), img)
	}
	for n := 0; n < len(good); n++ {
		check("truncation to "+itoa(n), good[:n])
	}
	check("a byte appended", append(bytes.Clone(good), 0))
}

func itoa(n int) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// FuzzSnapshotHeader: the header decoder never panics, and what it accepts
// re-encodes to the same bytes.
func FuzzSnapshotHeader(f *testing.F) {
	for _, m := range []SnapshotMeta{testMeta(1, false), testMeta(9, true), testMeta(300, true), metaWithMembership(9)} {
		b, err := encodeSnapHeader(&m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(snapMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeSnapHeader(b)
		if err != nil {
			if !errors.Is(err, ErrSnapshotCorrupt) {
				t.Fatalf("error %v does not wrap ErrSnapshotCorrupt", err)
			}
			return
		}
		again, err := encodeSnapHeader(&m)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted header does not re-encode: %v", err)
		}
	})
}

// FuzzSnapshotFile: arbitrary bytes as a snapshot file, alone or over a
// valid file: verification and the restore stream never panic, agree, and
// an accepted file's stream reads to its end.
func FuzzSnapshotFile(f *testing.F) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 3})
	good := writeSnapFile(f, fs, "/g", testMeta(5, true), bytes.Repeat([]byte{1, 2, 3}, 50))
	f.Add(good, 0, byte(0))
	f.Add(good, 70, byte(0x10))
	f.Add([]byte{}, 0, byte(0))
	f.Fuzz(func(t *testing.T, img []byte, at int, x byte) {
		if len(img) > 0 {
			img = bytes.Clone(img)
			img[uint(at)%uint(len(img))] ^= x
		}
		mfs := vfs.NewMemFS(vfs.MemConfig{Seed: 4})
		if err := mfs.WriteFile("/f", img); err != nil {
			t.Fatal(err)
		}
		fl, err := mfs.Open("/f")
		if err != nil {
			t.Fatal(err)
		}
		_, verr := verifySnap(fl)
		_ = fl.Close()
		_, _, rerr := readSnapBody(mfs, "/f")
		if (verr == nil) != (rerr == nil) {
			t.Fatalf("verify says %v, the restore stream %v", verr, rerr)
		}
		if verr != nil && !errors.Is(verr, ErrSnapshotCorrupt) {
			t.Fatalf("error %v does not wrap ErrSnapshotCorrupt", verr)
		}
	})
}

// TestSnapshotNames: file names parse back, and nothing else does.
func TestSnapshotNames(t *testing.T) {
	for _, kind := range []string{snapKindMade, snapKindRecv, snapKindPart, snapKindTmp} {
		n := snapName(kind, 0x1234, 7)
		k, i, tm, ok := parseSnapName(n)
		if !ok || k != kind || i != 0x1234 || tm != 7 {
			t.Fatalf("%s: %v %s %d %d", n, ok, k, i, tm)
		}
	}
	for _, n := range []string{"snap-1-2.snap", "bad-" + snapName(snapKindMade, 1, 1), "snap-0000000000000001-0000000000000001.tmp",
		"part-0000000000000001-0000000000000001.snap", "seg-0000000000000001.wal", "SNAP-0000000000000001-0000000000000001.snap"} {
		if _, _, _, ok := parseSnapName(n); ok {
			t.Fatalf("%s parsed", n)
		}
	}
}
