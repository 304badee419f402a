package raft_test

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/raft/rafttest"
)

// The scenario scripts of testdata/*.txt (etcd-io/raft's interaction-test
// format, rafttest.RunScript). Run with -rewrite to regenerate the expected
// outputs, then read the diff before committing it. conformance/coretrace
// runs the same scripts and replays every trace with spec.CheckTrace.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the scenario scripts")

// TestScenarios runs every script: its output must match and the cluster
// invariants must hold throughout.
func TestScenarios(t *testing.T) {
	paths, err := rafttest.Scripts("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			res, err := rafttest.RunScript(path, rafttest.ScriptOptions{Rewrite: *rewrite})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Mismatches {
				if !*rewrite {
					t.Error(m)
				}
			}
			for _, v := range res.Violations {
				t.Errorf("invariant violated: %s", v)
			}
		})
	}
}
