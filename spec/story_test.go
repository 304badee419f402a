package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStories runs every story of testdata/stories (story.go has the
// format): under its bug switches to the violation it expects, its steps
// accepted by the trace checker, and then with every fix on, where some
// step must no longer be possible or the invariant must hold at the end.
func TestStories(t *testing.T) {
	paths, err := filepath.Glob("testdata/stories/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no stories: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			st, err := ParseStory(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewModel(st.Config)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := st.Run(m)
			if err != nil {
				t.Fatalf("under %v: %v", st.Config.Bugs, err)
			}
			detail, err := st.Broken(m, steps)
			switch {
			case err != nil:
				t.Fatal(err)
			case detail == "":
				t.Fatalf("the story ends without breaking %s", st.Expect)
			}
			t.Logf("%s: %s", st.Expect, detail)
			checkSteps(t, m, steps)
			outcome, why, err := st.Fixed()
			switch {
			case err != nil:
				t.Fatal(err)
			case outcome == FixedBroken:
				t.Fatalf("with every fix on the story still breaks %s: %s", st.Expect, why)
			}
			t.Logf("with every fix on: %s %s", outcome, why)
		})
	}
}

// TestStoryRefusals: a story that cannot be read says where.
func TestStoryRefusals(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, text, want string }{
		{"no expect", "config servers=2\nTimeout s1\n", "no expect line"},
		{"unknown config", "config sevrers=2\nexpect NoAckedLoss\n", "unknown config"},
		{"bad bug", "config bugs=no-such-bug\nexpect NoAckedLoss\n", "no-such-bug"},
		{"two expects words", "expect A B\n", "want: expect INVARIANT"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, "s.txt")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ParseStory(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", c.name, err, c.want)
		}
	}
	path := filepath.Join(dir, "bad-step.txt")
	if err := os.WriteFile(path, []byte("config servers=2\nTimeout s9\nexpect NoAckedLoss\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := ParseStory(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(st.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Run(m); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a step of an unknown server: err %v, want one naming line 2", err)
	}
	st.Expect = "NoSuchInvariant"
	if _, err := st.Broken(m, []Step{{State: m.Init()}}); err == nil {
		t.Error("an unknown invariant was not refused")
	}
}
