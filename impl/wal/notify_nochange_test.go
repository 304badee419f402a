package wal

import "testing"

// Notify's channel closes at a change of the Progress, not otherwise: a
// SubmitSync behind pending work changes nothing yet (its ticket waits for that
// work), so it must not wake the waiters; once the work is durable it does.
func TestNotifyOnlyOnChange(t *testing.T) {
	_, w := openManual(t)
	mustAppend(t, w, entries(1, 2, 1))
	before := w.Progress()
	ch := w.Notify()
	ticket := w.SubmitSync()
	select {
	case <-ch:
		t.Fatalf("Notify fired at a SubmitSync that changed nothing: %+v, then %+v", before, w.Progress())
	default:
	}
	if p := w.Progress(); p.Synced != before.Synced || p.DurableIndex != before.DurableIndex {
		t.Fatalf("progress moved without a flush: %+v, then %+v", before, p)
	}
	for w.flushOnce() {
	}
	select {
	case <-ch:
	default:
		t.Fatal("Notify did not fire when the pending work became durable")
	}
	if p := w.Progress(); p.Synced < ticket || p.DurableIndex != 2 {
		t.Fatalf("after the flush: %+v, want synced >= %d and durable 2", p, ticket)
	}
}
