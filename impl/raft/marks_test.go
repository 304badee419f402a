package raft

import (
	"regexp"
	"strings"
	"testing"
)

// TestMarksNamed: every mark has a unique name "raft/words-with-dashes"
// (impl/marks's rule) and says when it is hit.
func TestMarksNamed(t *testing.T) {
	valid := regexp.MustCompile(`^raft/[a-z0-9-]+$`)
	seen := map[string]bool{}
	for _, m := range AllMarks() {
		if !valid.MatchString(m.String()) || seen[m.String()] || m.What() == "" {
			t.Errorf("mark %d: name %q (seen before: %v), what %q", m, m.String(), seen[m.String()], m.What())
		}
		seen[m.String()] = true
	}
	if len(seen) != int(markEnd)-1 || !strings.HasPrefix(Mark(0).String(), "raft/") || Mark(markEnd).What() != "" {
		t.Fatalf("%d marks named, want %d; out of range: %q", len(seen), markEnd-1, Mark(0).String())
	}
}

// TestMarksReported: the core reports the paths it takes to Config.OnMark:
// a follower refusing an AppendEntries whose previous entry it lacks, then
// holding the acknowledgment of entries not yet durable; with OnMark nil
// the same steps report nothing and work the same.
func TestMarksReported(t *testing.T) {
	for _, hook := range []bool{true, false} {
		got := map[Mark]int{}
		cfg := testConfig(2, NewMemoryStorage())
		if hook {
			cfg.OnMark = func(m Mark) { got[m]++ }
		}
		n := mustNode(t, cfg, Boot{})
		if err := n.Step(Message{Type: MsgApp, From: 1, To: 2, Term: 1, PrevLogIndex: 5, PrevLogTerm: 1, Seq: 1}); err != nil {
			t.Fatal(err)
		}
		if err := n.Step(Message{Type: MsgApp, From: 1, To: 2, Term: 1, Entries: []Entry{{Index: 1, Term: 1, Data: []byte("a")}}, Seq: 2}); err != nil {
			t.Fatal(err)
		}
		rd := n.Ready()
		if len(rd.Entries) != 1 {
			t.Fatalf("hook %v: the follower did not append the entry: %+v", hook, rd)
		}
		want := map[Mark]int{}
		if hook {
			want = map[Mark]int{MarkAppendRejected: 1, MarkAckAwaitsDurable: 1}
		}
		if len(got) != len(want) || got[MarkAppendRejected] != want[MarkAppendRejected] || got[MarkAckAwaitsDurable] != want[MarkAckAwaitsDurable] {
			t.Fatalf("hook %v: marks %v, want %v", hook, got, want)
		}
	}
}
