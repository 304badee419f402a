package wal

import (
	"sync"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// syncCountFS counts the fdatasyncs of each file, by the name it was opened
// or created under.
type syncCountFS struct {
	vfs.FS
	mu    sync.Mutex
	syncs map[string]int
}

func (f *syncCountFS) Open(name string) (vfs.File, error) {
	fl, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &syncCountFile{File: fl, fs: f, name: name}, nil
}

type syncCountFile struct {
	vfs.File
	fs   *syncCountFS
	name string
}

func (f *syncCountFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs[f.name]++
	f.fs.mu.Unlock()
	return f.File.Sync()
}

// Open fdatasyncs everything it keeps (Recovery.DurableIndex is IndexLast):
// also after a TRUNCATED verdict, where the records kept before the break
// are fdatasync'd in the segment that holds them before the cut segment
// supersedes the rest.
func TestTruncatedOpenSyncsWhatItKeeps(t *testing.T) {
	opts := manual(smallOptions())
	mem := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, mem, opts)
	fill(t, w, 20)
	_ = w.Close()
	names, lay := layout(t, mem, opts)
	last := names[len(names)-1]
	bs := lay[last]
	if len(bs) < 2 {
		t.Fatalf("set-up: %d batches in %s", len(bs), last)
	}
	if err := mem.FlipBit(segPath(last), bs[len(bs)-2].liveEnd-1, 0); err != nil {
		t.Fatal(err)
	}
	fs := &syncCountFS{FS: mem, syncs: map[string]int{}}
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	if rec.Verdict != Truncated || rec.StopSegment != last || rec.DurableIndex != rec.IndexLast {
		t.Fatalf("verdict %s in %s, durable %d last %d; want TRUNCATED in %s, durable = last", rec.Verdict, rec.StopSegment, rec.DurableIndex, rec.IndexLast, last)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.syncs[segPath(last)] == 0 {
		t.Fatalf("%s, which holds the records kept before the break, was not fdatasync'd at Open: %v", last, fs.syncs)
	}
}
