package wal

import (
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// The tail cache keeps up to TailCacheBytes of records on disk, the bound
// included: records that fill it exactly all stay, and one more evicts the
// oldest.
func TestTailCacheBoundInclusive(t *testing.T) {
	opts := manual(smallOptions())
	rec := recordHeaderBytes + 40 // entries() carries 40 bytes of data
	opts.TailCacheBytes = 4 * rec
	w, _ := mustOpen(t, vfs.NewMemFS(vfs.MemConfig{Seed: 1}), opts)
	defer w.Close()
	mustAppend(t, w, entries(1, 4, 1))
	for w.flushOnce() {
	}
	w.mu.Lock()
	first, bytes := w.cacheFirst, w.cacheBytes
	w.mu.Unlock()
	if first != 1 || bytes != 4*rec {
		t.Fatalf("four records filling the cache exactly: cache from %d, %d bytes; want from 1, %d bytes", first, bytes, 4*rec)
	}
	mustAppend(t, w, entries(5, 1, 1))
	for w.flushOnce() {
	}
	w.mu.Lock()
	first, bytes = w.cacheFirst, w.cacheBytes
	w.mu.Unlock()
	if first != 2 || bytes != 4*rec {
		t.Fatalf("one more: cache from %d, %d bytes; want from 2, %d bytes", first, bytes, 4*rec)
	}
}
