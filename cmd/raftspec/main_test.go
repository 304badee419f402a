package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/trace"
)

// run calls one subcommand as main would and returns its stdout, stderr and exit status.
func run(t *testing.T, cmd func([]string, *bytes.Buffer, *bytes.Buffer) error, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := cmd(args, &stdout, &stderr)
	var exit exitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), int(exit)
	default:
		t.Fatalf("%v: %v\nstderr:\n%s", args, err, stderr.String())
		return "", "", 2
	}
}

func exploreCmd(args []string, o, e *bytes.Buffer) error    { return explore(args, o, e) }
func simulateCmd(args []string, o, e *bytes.Buffer) error   { return simulate(args, o, e) }
func checkTraceCmd(args []string, o, e *bytes.Buffer) error { return checkTrace(args, o, e) }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// The contract other tools (tla/tlc.sh, scripts/bugs.sh, CI) parse: explore's last
// stdout line and its exit status.
func TestExploreContract(t *testing.T) {
	raftS2 := []string{"-profile", "raft", "-servers", "2", "-values", "1", "-max-term", "2", "-max-log", "1", "-max-dup", "1", "-max-msgs", "1"}

	t.Run("ok", func(t *testing.T) {
		stdout, _, code := run(t, exploreCmd, raftS2...)
		// TLC's count for raft.tla at these bounds (docs/explorer.md, tla/MC_raft_s2_m1.cfg).
		want := regexp.MustCompile(`^distinct=1760 generated=13797 depth=\d+ result=ok$`)
		if code != 0 || !want.MatchString(lastLine(stdout)) {
			t.Fatalf("exit %d, last line %q", code, lastLine(stdout))
		}
	})

	t.Run("violation", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cex.ndjson")
		stdout, _, code := run(t, exploreCmd, "-profile", "durable", "-servers", "2", "-values", "1", "-max-term", "2",
			"-max-log", "1", "-max-dup", "1", "-max-msgs", "1", "-crashes", "0", "-corruptions", "0",
			"-bug", "self-counts-appended", "-invariant", "CommittedIsDurable", "-trace", path)
		want := regexp.MustCompile(`^distinct=\d+ generated=\d+ depth=\d+ result=violation invariant=CommittedIsDurable trace=(\S+)$`)
		m := want.FindStringSubmatch(lastLine(stdout))
		if code != 1 || m == nil || m[1] != path {
			t.Fatalf("exit %d, last line %q", code, lastLine(stdout))
		}
		// The counterexample is a behaviour of the spec with the switch it declares.
		out, _, code := run(t, checkTraceCmd, path)
		if code != 0 || !strings.Contains(out, ": ok (") {
			t.Fatalf("check-trace of the counterexample: exit %d: %s", code, out)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		// A member can only be TRUNCATED by a corruption, and the budget is zero.
		args := append([]string{}, raftS2...)
		args[1] = "durable"
		args = append(args, "-crashes", "0", "-corruptions", "0", "-sometimes", "MemberTruncated")
		stdout, stderr, code := run(t, exploreCmd, args...)
		if code != 1 || !strings.HasSuffix(lastLine(stdout), "result=unreachable") || !strings.Contains(stderr, "MemberTruncated") {
			t.Fatalf("exit %d, last line %q, stderr %q", code, lastLine(stdout), stderr)
		}
	})
}

// simulate with parallel workers writes every walk as a trace (OnWalk runs on every
// worker: this runs under -race too), and check-trace accepts each.
func TestSimulateTracesAreAccepted(t *testing.T) {
	dir := t.TempDir()
	stdout, _, code := run(t, simulateCmd, "-profile", "durable", "-servers", "3", "-values", "1", "-max-term", "3",
		"-max-log", "2", "-max-dup", "1", "-max-msgs", "2", "-crashes", "1", "-corruptions", "1",
		"-walks", "40", "-depth", "60", "-workers", "2", "-trace-dir", dir)
	if code != 0 || !strings.HasSuffix(lastLine(stdout), "result=ok") {
		t.Fatalf("exit %d, last line %q", code, lastLine(stdout))
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if err != nil || len(files) != 40 {
		t.Fatalf("%d traces written, want 40 (%v)", len(files), err)
	}
	out, _, code := run(t, checkTraceCmd, files...)
	if code != 0 || strings.Count(out, ": ok (") != 40 {
		t.Fatalf("check-trace: exit %d:\n%s", code, out)
	}
}

// check-trace rejects a trace with one event altered, names the file, and exits 1.
func TestCheckTraceRejectsMutated(t *testing.T) {
	path := filepath.Join("..", "..", "tla", "traces", "mutated", "wrong-term.ndjson")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	out, _, code := run(t, checkTraceCmd, path)
	if code != 1 || !strings.Contains(out, "wrong-term.ndjson: REJECTED") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// check-trace says a trace whose last line is torn (its writer killed) is
// torn, and with -torn-tail checks the events before it.
func TestCheckTraceTornTail(t *testing.T) {
	// Any kept production walk: which seeds are kept changes with the walks
	// (go generate ./tla).
	walks, err := filepath.Glob(filepath.Join("..", "..", "tla", "traces", "walk-production-s3-*.ndjson"))
	if err != nil || len(walks) == 0 {
		t.Fatalf("no production walk kept in tla/traces (%v)", err)
	}
	data, err := os.ReadFile(walks[0])
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "torn.ndjson")
	if err := os.WriteFile(path, data[:len(data)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := run(t, checkTraceCmd, path)
	if code != 1 || !strings.Contains(out, "REJECTED") || !strings.Contains(out, "torn last line") {
		t.Fatalf("exit %d: %s", code, out)
	}
	lines := bytes.Count(data, []byte("\n"))
	out, _, code = run(t, checkTraceCmd, "-torn-tail", path)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("ok (%d events; a torn last line dropped)", lines-1)) {
		t.Fatalf("-torn-tail: exit %d: %s", code, out)
	}
}

// A trace that cannot be written fails the run with the write's error, whichever
// worker hit it.
func TestSimulateTraceWriteFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	var stdout, stderr bytes.Buffer
	err := simulate([]string{"-profile", "raft", "-servers", "3", "-values", "1", "-max-term", "2", "-max-log", "1",
		"-max-dup", "1", "-max-msgs", "1", "-walks", "20", "-depth", "20", "-workers", "2", "-trace-dir", dir}, &stdout, &stderr)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want the write's not-exist error", err)
	}
}

// check-trace DIR merges one cluster's per-node traces (a raftd demo run)
// and accepts the run; with one message's term changed in one node's file
// (still valid JSON) it rejects the merged run, names the directory and
// keeps the merged trace.
func TestCheckTraceDirMerged(t *testing.T) {
	src := filepath.Join("..", "..", "viz", "testdata", "raftd-demo")
	out, _, code := run(t, checkTraceCmd, src)
	if code != 0 || !strings.Contains(out, "ok (") || !strings.Contains(out, "merged from 4 files") {
		t.Fatalf("exit %d: %s", code, out)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(src, "*.ndjson"))
	mutated := false
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !mutated && bytes.Contains(data, []byte(`"mtype":"AppendEntriesResponse","mterm":`)) {
			k := bytes.Index(data, []byte(`"mtype":"AppendEntriesResponse","mterm":`)) + len(`"mtype":"AppendEntriesResponse","mterm":`)
			data = append(append(append([]byte{}, data[:k]...), '9'), data[k:]...) // mterm 2 becomes 92
			mutated = true
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !mutated {
		t.Fatal("no AppendEntriesResponse to mutate")
	}
	out, _, code = run(t, checkTraceCmd, dir)
	if code != 1 || !strings.Contains(out, dir+": REJECTED") {
		t.Fatalf("mutated: exit %d: %s", code, out)
	}
	if _, err := os.Stat(dir + ".merged.ndjson"); err != nil {
		t.Fatalf("the rejected merged run is not kept: %v", err)
	}
}

// TestCheckTraceDirClocked: check-trace DIR on a raftd run whose traces
// carry Lamport clocks merges them by clock and accepts the run (node 3
// killed with kill -9 and restarted: its second file resumes its clock);
// with that second boot's clocks counted from 1 again the merge is refused,
// naming the file; with one message's term changed in one file the merged
// run is rejected.
func TestCheckTraceDirClocked(t *testing.T) {
	src := filepath.Join("..", "..", "viz", "testdata", "raftd-clocked")
	out, _, code := run(t, checkTraceCmd, src)
	if code != 0 || !strings.Contains(out, "merged by logical clock from 4 files") {
		t.Fatalf("exit %d: %s", code, out)
	}
	names, _ := filepath.Glob(filepath.Join(src, "n3-*.ndjson"))
	slices.Sort(names) // the same number of digits: boot order
	if len(names) != 2 {
		t.Fatalf("node 3's files: %v", names)
	}
	copyDir := func(edit func(name string, evs []trace.Event)) string {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		all, _ := filepath.Glob(filepath.Join(src, "*.ndjson"))
		for _, name := range all {
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := trace.Decode(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			edit(name, evs)
			var b bytes.Buffer
			w := trace.NewWriterVersion(&b, evs[0].V)
			for _, e := range evs {
				w.Write(e)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	reset := copyDir(func(name string, evs []trace.Event) {
		if name == names[1] {
			for k := range evs {
				evs[k].Clock = uint64(k + 1)
			}
		}
	})
	var stdout, stderr bytes.Buffer
	err := checkTrace([]string{reset}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "clock goes back at its boot") || !strings.Contains(err.Error(), filepath.Base(names[1])) {
		t.Fatalf("a restart that did not resume its clock: %v (%s)", err, stdout.String())
	}
	mutated := false
	term := copyDir(func(name string, evs []trace.Event) {
		for k := len(evs) / 2; k < len(evs) && !mutated; k++ {
			if evs[k].Msg != nil {
				evs[k].Msg.Mterm += 7
				mutated = true
			}
		}
	})
	out, _, code = run(t, checkTraceCmd, term)
	if !mutated || code != 1 || !strings.Contains(out, term+": REJECTED") {
		t.Fatalf("one message's term changed: exit %d: %s", code, out)
	}
}
