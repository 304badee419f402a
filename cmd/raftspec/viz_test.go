package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func vizCmd(args []string, o, e *bytes.Buffer) error   { return vizCommand(args, o, e) }
func storyCmd(args []string, o, e *bytes.Buffer) error { return storyCommand(args, o, e) }

// A counterexample prints the command that draws it, and that command
// writes a page.
func TestCounterexamplePrintsDrawCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cex.ndjson")
	_, stderr, code := run(t, exploreCmd, "-profile", "durable", "-servers", "2", "-values", "1", "-max-term", "2",
		"-max-log", "1", "-max-dup", "1", "-max-msgs", "1", "-bug", "self-counts-appended", "-trace", path)
	want := "draw it: raftspec viz " + path + " > " + strings.TrimSuffix(path, ".ndjson") + ".html"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
	}
	page, stderr, code := run(t, vizCmd, path)
	if code != 0 || !strings.HasPrefix(page, "<!doctype html>") || !strings.Contains(stderr, "CommittedIsDurable breaks at event") {
		t.Fatalf("viz: exit %d, %d bytes, %s", code, len(page), stderr)
	}
	_, stderr, code = run(t, simulateCmd, "-profile", "durable", "-servers", "3", "-values", "1", "-max-term", "3", "-max-log", "1",
		"-max-dup", "1", "-max-msgs", "2", "-crashes", "1", "-bug", "follower-acks-appended", "-invariant", "NoAckedLoss",
		"-walks", "1000", "-depth", "60", "-trace", path)
	if code != 1 || !strings.Contains(stderr, "draw it: raftspec viz "+path) {
		t.Fatalf("simulate: exit %d, stderr:\n%s", code, stderr)
	}
}

// raftspec viz reads a directory of per-node traces and writes -o.
func TestVizDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cluster.html")
	_, stderr, code := run(t, vizCmd, "-o", out, "../../viz/testdata/raftd-demo")
	if code != 0 || !strings.Contains(stderr, "the spec accepts it") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(b, []byte(`"merged":true`)) {
		t.Fatalf("%s: %v", out, err)
	}
	var o, e bytes.Buffer
	if err := vizCommand([]string{t.TempDir()}, &o, &e); err == nil || !strings.Contains(err.Error(), "no *.ndjson") {
		t.Fatalf("an empty directory: %v", err)
	}
}

// Every story of spec/testdata/stories runs as raftspec story: it breaks
// the invariant it expects, its trace is a behaviour of its model, and with
// every fix on it is blocked or harmless.
func TestStoryCommand(t *testing.T) {
	paths, _ := filepath.Glob("../../spec/testdata/stories/*.txt")
	if len(paths) < 7 {
		t.Fatalf("%d stories", len(paths))
	}
	line := regexp.MustCompile(`^steps=\d+ result=violation invariant=(\w+) trace=(\S+) fixed=(blocked|holds)$`)
	for _, p := range paths {
		tr := filepath.Join(t.TempDir(), "story.ndjson")
		stdout, stderr, code := run(t, storyCmd, "-q", "-trace", tr, p)
		m := line.FindStringSubmatch(lastLine(stdout))
		if code != 0 || m == nil || m[2] != tr {
			t.Fatalf("%s: exit %d, %q\n%s", p, code, stdout, stderr)
		}
		if out, _, code := run(t, checkTraceCmd, tr); code != 0 {
			t.Fatalf("%s: check-trace: %s", p, out)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte("config servers=2\nTimeout s1\nBecomeLeader s1\nexpect NoAckedLoss\n"), 0o644)
	var o, e bytes.Buffer
	if err := storyCommand([]string{"-q", bad}, &o, &e); err == nil || !strings.Contains(err.Error(), "0 possible successors") {
		t.Fatalf("a story with an impossible step: %v", err)
	}
}
