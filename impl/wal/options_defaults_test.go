package wal

import (
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// Zero options take their documented defaults; RecycleMax below zero means
// none kept.
func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	for name, c := range map[string]struct{ got, want int64 }{
		"SegmentBytes":   {int64(o.SegmentBytes), segmentBytesDefault},
		"BlockBytes":     {int64(o.BlockBytes), blockBytesDefault},
		"EntryBytesMax":  {int64(o.EntryBytesMax), int64(min(entryBytesMaxDefault, int(segmentBytesDefault)/4))},
		"TailCacheBytes": {int64(o.TailCacheBytes), tailCacheBytesDefault},
		"SealDelay":      {int64(o.SealDelay), int64(sealDelayDefault)},
		"RecycleMax":     {int64(o.RecycleMax), recycleMaxDefault},
		"ReadRetries":    {int64(o.ReadRetries), readRetriesDefault},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want the default %d", name, c.got, c.want)
		}
	}
	if o.Logger == nil {
		t.Error("no default logger")
	}
	if r := (Options{RecycleMax: -1}).withDefaults().RecycleMax; r != 0 {
		t.Errorf("RecycleMax -1: %d, want 0 (keep none)", r)
	}
}

// With SealDelay left zero, a stepped WAL seals after the default delay: the
// deadline after a publish is sealDelayDefault later.
func TestSealDelayDefaultApplies(t *testing.T) {
	clock := newFakeClock()
	opts := manual(smallOptions())
	opts.Clock, opts.SealDelay = clock, 0
	w, _ := mustOpen(t, vfs.NewMemFS(vfs.MemConfig{Seed: 1}), opts)
	defer w.Close()
	mustAppend(t, w, entries(1, 1, 1))
	steps(t, w)
	published := clock.Now()
	if d, ok := w.NextDeadline(); !ok || !d.Equal(published.Add(sealDelayDefault)) {
		t.Fatalf("deadline %v %v, want the default SealDelay (%v) after the publish", d, ok, sealDelayDefault)
	}
	clock.Advance(sealDelayDefault - time.Millisecond)
	if k := w.NextStep(); k != StepNone {
		t.Fatalf("next step %s before the default SealDelay", k)
	}
}
