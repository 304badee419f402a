package vfs

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"syscall"
	"testing"
)

func mustWrite(t *testing.T, f File, p []byte, off int64) {
	t.Helper()
	if _, err := f.WriteAt(p, off); err != nil {
		t.Fatal(err)
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newDisk(t *testing.T, cfg MemConfig) *MemFS {
	t.Helper()
	m := NewMemFS(cfg)
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMemSyncedDataAndNamesSurviveCrash(t *testing.T) {
	for seed := range uint64(50) {
		m := newDisk(t, MemConfig{Seed: seed})
		f, err := m.Create("/d/a")
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Repeat([]byte("x"), 3000)
		mustWrite(t, f, want, 100)
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := m.SyncDir("/d"); err != nil {
			t.Fatal(err)
		}
		m.Crash()
		if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrCrashed) {
			t.Fatalf("handle from before the crash: err %v, want ErrCrashed", err)
		}
		got, err := m.ReadFile("/d/a")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[100:], want) || len(got) != 3100 {
			t.Fatalf("seed %d: synced data changed by a crash", seed)
		}
	}
}

// Every sector of an unsynced write ends up old, new, or (at most one per write) a
// prefix of new bytes over old ones; all outcomes occur across seeds.
func TestMemUnsyncedWriteOutcomes(t *testing.T) {
	const sector = 512
	seen := map[string]bool{}
	for seed := range uint64(400) {
		m := newDisk(t, MemConfig{Seed: seed})
		f, _ := m.Create("/d/a")
		old := bytes.Repeat([]byte{'o'}, 4*sector)
		mustWrite(t, f, old, 0)
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		_ = m.SyncDir("/d")
		mustWrite(t, f, bytes.Repeat([]byte{'n'}, 4*sector), 0)
		m.Crash()
		got, _ := m.ReadFile("/d/a")
		newSectors, torn := 0, 0
		for s := 0; s < 4; s++ {
			sec := got[s*sector : (s+1)*sector]
			i := bytes.IndexByte(sec, 'o')
			switch {
			case i == -1:
				newSectors++
			case i == 0:
			default:
				if bytes.IndexByte(sec[i:], 'n') != -1 {
					t.Fatalf("seed %d: sector %d is not a prefix of new bytes over old ones", seed, s)
				}
				torn++
			}
		}
		if torn > 1 {
			t.Fatalf("seed %d: %d torn sectors in one write", seed, torn)
		}
		switch {
		case torn == 1:
			seen["torn"] = true
		case newSectors == 0:
			seen["lost"] = true
		case newSectors == 4:
			seen["whole"] = true
		default:
			seen["part"] = true
		}
	}
	for _, k := range []string{"lost", "whole", "part", "torn"} {
		if !seen[k] {
			t.Errorf("outcome %q never happened in 400 seeds", k)
		}
	}
}

func TestMemNamespaceNeedsSyncDir(t *testing.T) {
	lost, kept := 0, 0
	for seed := range uint64(100) {
		m := newDisk(t, MemConfig{Seed: seed})
		f, _ := m.Create("/d/a")
		mustWrite(t, f, []byte("data"), 0)
		_ = f.Sync()
		m.Crash()
		m.Restart()
		if _, err := m.Open("/d/a"); errors.Is(err, ErrNotExist) {
			lost++
		} else {
			kept++
		}
	}
	if lost == 0 || kept == 0 {
		t.Fatalf("unsynced create: lost %d kept %d of 100; want both outcomes", lost, kept)
	}
}

// After an EIO the failed writes may be gone even though the page cache still shows
// them and a later Sync succeeds: retrying fdatasync proves nothing.
func TestMemSyncEIOMarksClean(t *testing.T) {
	lostAfterRetry := false
	for seed := range uint64(100) {
		m := newDisk(t, MemConfig{Seed: seed})
		f, _ := m.Create("/d/a")
		_ = f.Sync()
		_ = m.SyncDir("/d")
		mustWrite(t, f, []byte("payload"), 0)
		mustNil(t, m.FailSync("/d/a"))
		err := f.Sync()
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("err %v, want EIO", err)
		}
		got := make([]byte, 7)
		if _, err := f.ReadAt(got, 0); err != nil || string(got) != "payload" {
			t.Fatalf("page cache after EIO: %q %v", got, err)
		}
		if err := f.Sync(); err != nil {
			t.Fatalf("second sync: %v", err)
		}
		m.Crash()
		if b, _ := m.ReadFile("/d/a"); !bytes.Equal(b, []byte("payload")) {
			lostAfterRetry = true
		}
	}
	if !lostAfterRetry {
		t.Fatal("a write that failed its sync always survived; the model should lose it sometimes")
	}
}

func TestMemReadFlips(t *testing.T) {
	m := newDisk(t, MemConfig{Seed: 1})
	f, _ := m.Create("/d/a")
	mustWrite(t, f, []byte{0, 0, 0, 0}, 0)
	mustNil(t, m.FlipBitOnRead("/d/a", 2, 3, 1))
	b := make([]byte, 4)
	_, _ = f.ReadAt(b, 0)
	if b[2] != 8 {
		t.Fatalf("first read %v, want bit 3 of byte 2 flipped", b)
	}
	_, _ = f.ReadAt(b, 0)
	if b[2] != 0 {
		t.Fatalf("second read %v, want the stored bytes", b)
	}
	if err := m.FlipBit("/d/a", 1, 0); err != nil {
		t.Fatal(err)
	}
	_, _ = f.ReadAt(b, 0)
	if b[1] != 1 {
		t.Fatalf("flip at rest not visible: %v", b)
	}
	// Random transient flips.
	r := newDisk(t, MemConfig{Seed: 2, ReadFlipRate: 1})
	g, _ := r.Create("/d/a")
	mustWrite(t, g, make([]byte, 64), 0)
	_, _ = g.ReadAt(b, 0)
	if bytes.Equal(b, make([]byte, 4)) {
		// The flip may land outside the four bytes read; read everything.
		all := make([]byte, 64)
		_, _ = g.ReadAt(all, 0)
		if bytes.Equal(all, make([]byte, 64)) {
			t.Fatal("ReadFlipRate 1 returned unflipped bytes")
		}
	}
}

func TestMemMisdirectedWrite(t *testing.T) {
	m := newDisk(t, MemConfig{Seed: 1})
	f, _ := m.Create("/d/a")
	mustWrite(t, f, make([]byte, 2048), 0)
	mustNil(t, m.MisdirectWrite("/d/a", 1024))
	mustWrite(t, f, []byte("abc"), 0)
	got, _ := m.ReadFile("/d/a")
	if !bytes.Equal(got[:3], []byte{0, 0, 0}) || string(got[1024:1027]) != "abc" {
		t.Fatalf("misdirected write: aimed range %q, landed range %q", got[:3], got[1024:1027])
	}
}

func TestMemCapacityAndWriteErrors(t *testing.T) {
	m := newDisk(t, MemConfig{Seed: 1, CapacityBytes: 1000})
	f, _ := m.Create("/d/a")
	if err := f.Preallocate(900); err != nil {
		t.Fatal(err)
	}
	if err := f.Preallocate(2000); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("preallocate beyond capacity: %v, want ENOSPC", err)
	}
	if _, err := f.WriteAt(make([]byte, 200), 900); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write beyond capacity: %v, want ENOSPC", err)
	}
	mustNil(t, m.FailWrite("/d/a", syscall.EIO))
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("injected write error: %v", err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatalf("write after the one-shot error: %v", err)
	}
}

func TestMemCrashAtOp(t *testing.T) {
	m := newDisk(t, MemConfig{Seed: 1})
	m.CrashAtOp(3)
	f, err := m.Create("/d/a") // op 1
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte("x"), 0) // op 2
	if err := f.Sync(); !errors.Is(err, ErrCrashed) {
		t.Fatalf("op 3: %v, want ErrCrashed", err)
	}
	if _, err := f.WriteAt([]byte("y"), 0); !errors.Is(err, ErrCrashed) {
		t.Fatalf("stale handle: %v", err)
	}
	if _, err := m.Create("/d/b"); !errors.Is(err, ErrCrashed) {
		t.Fatalf("create on a crashed disk: %v", err)
	}
	if m.Ops() != 3 {
		t.Fatalf("ops %d", m.Ops())
	}
	m.Restart()
	if _, err := m.Create("/d/b"); err != nil {
		t.Fatalf("create after restart: %v", err)
	}
}

func TestMemReadAtEOF(t *testing.T) {
	m := newDisk(t, MemConfig{})
	f, _ := m.Create("/d/a")
	mustWrite(t, f, []byte("abc"), 0)
	b := make([]byte, 5)
	if n, err := f.ReadAt(b, 1); n != 2 || err != io.EOF {
		t.Fatalf("short read: %d %v", n, err)
	}
	names, _ := m.List("/d")
	if len(names) != 1 || names[0] != "a" {
		t.Fatalf("list %v", names)
	}
}

func TestOS(t *testing.T) {
	dir := t.TempDir()
	var fsys FS = OS{}
	name := filepath.Join(dir, "a")
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Preallocate(8192); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Size(); err != nil || n != 8192 {
		t.Fatalf("size after preallocate: %d %v", n, err)
	}
	mustWrite(t, f, []byte("hello"), 4096)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	if _, err := f.ReadAt(b, 4096); err != nil || string(b) != "hello" {
		t.Fatalf("read %q %v", b, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(name, filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	names, err := fsys.List(dir)
	if err != nil || len(names) != 1 || names[0] != "b" {
		t.Fatalf("list %v %v", names, err)
	}
	g, err := fsys.Open(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Truncate(10); err != nil {
		t.Fatal(err)
	}
	_ = g.Close()
	if err := fsys.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open(filepath.Join(dir, "b")); !errors.Is(err, ErrNotExist) {
		t.Fatalf("open removed: %v", err)
	}
}

// Digest covers names, the page cache, stable storage and unsynced writes.
func TestMemDigest(t *testing.T) {
	build := func(sync bool, data string) *MemFS {
		m := NewMemFS(MemConfig{Seed: 1})
		if err := m.MkdirAll("/d"); err != nil {
			t.Fatal(err)
		}
		f, err := m.Create("/d/f")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(data), 0); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	a, b := build(true, "abc"), build(true, "abc")
	if a.Digest() != b.Digest() {
		t.Fatal("equal disks, different digests")
	}
	if a.Digest() == build(false, "abc").Digest() {
		t.Fatal("an unsynced write does not change the digest")
	}
	if a.Digest() == build(true, "abd").Digest() {
		t.Fatal("different bytes, same digest")
	}
	if err := a.Rename("/d/f", "/d/g"); err != nil {
		t.Fatal(err)
	}
	if err := b.Rename("/d/f", "/d/h"); err != nil {
		t.Fatal(err)
	}
	if a.Digest() == b.Digest() {
		t.Fatal("different names, same digest")
	}
}
