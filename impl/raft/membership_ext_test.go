package raft_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/raft/rafttest"
)

// The membership bug switches: each scenario holds with the rule and
// breaks NoAckedLoss without it.
func TestConfigBugSwitches(t *testing.T) {
	for _, c := range []struct {
		script string
		bug    raft.Bug
	}{
		{"config_2015.txt", raft.BugConfigBeforeOwnTermCommit},
		{"config_one_at_a_time.txt", raft.BugConfigWhileUncommitted},
	} {
		path := filepath.Join("testdata", c.script)
		res, err := rafttest.RunScript(path, rafttest.ScriptOptions{Bugs: c.bug})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(res.Violations, "\n"), "NoAckedLoss") {
			t.Errorf("%s with %v: violations %v, want NoAckedLoss", c.script, c.bug, res.Violations)
		}
	}
}
