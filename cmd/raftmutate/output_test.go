package main

import (
	"strings"
	"testing"
)

// What killed a mutant is read from the judge's output: go test's failed
// tests (innermost first) and panics, raftspec's verdict lines, compile
// errors.
func TestJudgeOutput(t *testing.T) {
	for _, c := range []struct {
		name, out string
		exit      int
		by        string
		build     bool
	}{
		{"go test", "--- FAIL: TestA (0.00s)\n    --- FAIL: TestA/sub (0.00s)\n        a_test.go:10: bad\n--- FAIL: TestB (0.01s)\nFAIL\nFAIL\tpkg\t0.1s\n",
			1, "tests TestA/sub, TestB", false},
		{"go test panic", "--- FAIL: TestW (0.00s)\npanic: wal: invariant violated: tip 3 [recovered]\n\tpanic: wal\ngoroutine 1\nFAIL\tpkg\t0.1s\n",
			2, "tests TestW; panic: wal: invariant violated: tip 3 [recovered]", false},
		{"many tests", "--- FAIL: T1 (0s)\n--- FAIL: T2 (0s)\n--- FAIL: T3 (0s)\n--- FAIL: T4 (0s)\n--- FAIL: T5 (0s)\n",
			1, "tests T1, T2, T3 (+2 more)", false},
		{"explore violation", "Error: invariant ElectionSafety is violated: two leaders in term 2\n  0: Init\nsometimes LeaderElected reached\ndistinct=10 generated=20 depth=3 result=violation invariant=ElectionSafety trace=/tmp/x.ndjson\n",
			1, "invariant ElectionSafety", false},
		{"unreachable", "Error: sometimes ConflictTruncates: unreachable within the bounds\nwalks=2000 steps=1 generated=2 result=unreachable\n",
			1, "unreachable: sometimes ConflictTruncates: unreachable within the bounds", false},
		{"check-trace", "/tmp/w/walk-000001.ndjson: ok (40 events)\n/tmp/w/walk-000002.ndjson: REJECTED: event 3: no such step\n/tmp/w/walk-000003.ndjson: REJECTED: event 1: x\n",
			1, "trace rejected: /tmp/w/walk-000002.ndjson: REJECTED: event 3: no such step", false},
		{"plain failure", "something went wrong\n\n", 3, "exit status 3: something went wrong", false},
		{"no output", "", 4, "exit status 4", false},
		{"go test build failed", "# pkg\n./a.go:3:2: declared and not used: x\nFAIL\tpkg [build failed]\n", 1, "", true},
		{"go run compile error", "# github.com/x/spec\nspec/a.go:10:3: declared and not used: y\n", 1, "", true},
		{"test log line is no compile error", "--- FAIL: TestC (0.00s)\n    c_test.go:5: got 1\n", 1, "tests TestC", false},
	} {
		var o judgeOutput
		// Written in odd pieces, as a pipe delivers them.
		for i := 0; i < len(c.out); i += 7 {
			o.Write([]byte(c.out[i:min(i+7, len(c.out))]))
		}
		o.flush()
		if o.buildFailed != c.build {
			t.Errorf("%s: build failed %v, want %v", c.name, o.buildFailed, c.build)
		}
		if !c.build {
			if got := o.killedBy(c.exit); got != c.by {
				t.Errorf("%s: killed by %q, want %q", c.name, got, c.by)
			}
		}
	}
}

// The kept tail is the last non-empty lines, however much was written.
func TestJudgeOutputTail(t *testing.T) {
	var o judgeOutput
	for i := 0; i < 3*keepLines; i++ {
		o.Write([]byte(strings.Repeat("x", i%3) + "\n"))
	}
	o.Write([]byte("last without newline"))
	o.flush()
	got := o.lines(3)
	if len(got) != 3 || got[2] != "last without newline" || got[0] != "x" || got[1] != "xx" {
		t.Errorf("tail %q", got)
	}
}
