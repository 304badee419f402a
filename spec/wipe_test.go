package spec

import (
	"strings"
	"testing"
)

// TestWipeStories: the explorer's counterexample of -bug wiped-votes
// breaks LeaderCompleteness; with the first-boot confirmation the same
// story stops where the wiped member would have elected s2.
func TestWipeStories(t *testing.T) {
	bug, err := ParseStory("testdata/wipe/wiped-votes.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(bug.Config)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := bug.Run(m)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := bug.Broken(m, steps); err != nil || d == "" {
		t.Fatalf("the bug's story does not break %s: %q %v", bug.Expect, d, err)
	}
	fixed, err := ParseStory("testdata/wipe/wiped-fixed.txt")
	if err != nil {
		t.Fatal(err)
	}
	fm, err := NewModel(fixed.Config)
	if err != nil {
		t.Fatal(err)
	}
	steps, err = fixed.Run(fm)
	if err == nil || !strings.Contains(err.Error(), "BecomeLeader s2") {
		t.Fatalf("with the rule: %v, want blocked at BecomeLeader s2", err)
	}
	last := steps[len(steps)-1].State
	if !last.Wipe.Lost.Has(3) || last.Wipe.Unconfirmed != 0 || last.VotedFor[3] != Nil {
		t.Fatalf("with the rule, s3 at the end: %+v, voted for %v", last.Wipe, last.VotedFor[3])
	}
}

// TestWipeConfirmation: the rule's table at a first boot and after it.
func TestWipeConfirmation(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileRaft, Servers: 3, Values: 1, MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1, Wipes: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := m.Init()
	if s.Wipe.Unconfirmed.Len() != 3 || !m.passive(s, 1) {
		t.Fatalf("Init: %+v", s.Wipe)
	}
	var timeouts int
	m.Timeout(s, 1, func(State, Label) { timeouts++ })
	if timeouts != 0 {
		t.Fatal("an unconfirmed member times out")
	}
	var confirms int
	m.ConfirmFirstBoot(s, 1, func(State, Label) { confirms++ })
	if confirms != 0 {
		t.Fatal("confirmed without answers")
	}
	if _, err := NewModel(Config{Profile: ProfileRaft, Servers: 3, Values: 1, MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1, Bugs: BugWipedVotes}); err == nil {
		t.Fatal("-bug wiped-votes without -wipes accepted")
	}
	if _, err := NewModel(Config{Profile: ProfileDurable, Servers: 3, Values: 1, MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1, Wipes: 1, Production: true}); err == nil {
		t.Fatal("-wipes with the production actions accepted")
	}
}
