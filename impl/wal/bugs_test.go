package wal

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Each test-only bug switch re-introduces a defect; the test that guards against it
// must fail with the switch on (and passes with it off, as the suite shows).
func TestBugSwitchesAreCaught(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  walBug
		test func(t testing.TB, bug walBug)
	}{
		// Issue 10 item 11: the crash workload reads Progress after every operation,
		// also a failed one, so a durable index published before an fdatasync that
		// then fails (here: crashes) is seen and checked at recovery.
		{"publish-before-sync/crash-at-every-point", bugPublishBeforeSync, func(t testing.TB, bug walBug) {
			crashAtEveryPoint(t, 24, bug)
		}},
		// Issue 10 item 12: an append during an fdatasync.
		{"edge-triggered/stepped", bugEdgeTriggered, func(t testing.TB, bug walBug) {
			appendDuringSyncStepped(t, StepSync, bug)
		}},
		{"edge-triggered/flusher", bugEdgeTriggered, func(t testing.TB, bug walBug) {
			appendDuringSyncFlusher(t, bug, 200*time.Millisecond) // with the bug it can only time out
		}},
		{"publish-tip/stepped", bugPublishTip, func(t testing.TB, bug walBug) {
			appendDuringSyncStepped(t, StepWrite, bug)
		}},
		{"publish-tip/flusher", bugPublishTip, func(t testing.TB, bug walBug) {
			appendDuringSyncFlusher(t, bug, time.Minute)
		}},
		// Issue 10 item 6.
		{"corrupt-read-not-fatal", bugCorruptReadNotFatal, corruptReadFailsWAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, failed := runExpectingFailure(t, func(tb testing.TB) { tc.test(tb, tc.bug) })
			if !failed {
				t.Fatalf("the test passes with the bug switched on")
			}
			t.Logf("caught: %s", msg)
		})
	}
}

// failRecorder is a testing.TB whose failures are recorded instead of failing the
// test; Fatal ends the goroutine running the body.
type failRecorder struct {
	testing.TB
	mu     sync.Mutex
	failed bool
	msg    string
}

func (r *failRecorder) record(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failed {
		r.failed, r.msg = true, msg
	}
}

func (r *failRecorder) Helper()                           {}
func (r *failRecorder) Logf(string, ...any)               {}
func (r *failRecorder) Log(...any)                        {}
func (r *failRecorder) Errorf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }
func (r *failRecorder) Error(args ...any)                 { r.record(fmt.Sprint(args...)) }
func (r *failRecorder) Fail()                             { r.record("Fail") }
func (r *failRecorder) FailNow()                          { r.record("FailNow"); runtime.Goexit() }
func (r *failRecorder) Fatal(args ...any)                 { r.record(fmt.Sprint(args...)); runtime.Goexit() }
func (r *failRecorder) Fatalf(format string, args ...any) {
	r.record(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (r *failRecorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// runExpectingFailure runs body with a failRecorder in a goroutine of its own and
// returns the first failure it recorded.
func runExpectingFailure(t *testing.T, body func(testing.TB)) (string, bool) {
	r := &failRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(r)
	}()
	<-done
	return r.msg, r.Failed()
}
