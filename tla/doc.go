// Package tla holds the TLA+ twin of spec/ and the Go side of checking that
// the two are the same protocol.
//
// # Files
//
//   - DurableRaft.tla: the protocol of spec/, profile raft (raft.tla's state
//     graph) and profile durable, with the bug switches as a constant.
//   - MCDurableRaft.tla and MC_*.cfg: the explorer's bounds as a CONSTRAINT,
//     one .cfg per bound setting that `raftspec explore` also runs. The first
//     lines of each .cfg say which raftspec run it mirrors and what both
//     report ("\* raftspec: ..." and "\* expect: ...").
//   - TraceDurableRaft.tla and .cfg: trace validation of the trace/ format.
//   - traces/ and traces/mutated/: example traces written by spec/ that TLC
//     and `raftspec check-trace` must accept, and mutations of them that both
//     must reject. [Generate] writes them (go generate ./tla).
//   - tlc.sh: runs TLC on all of it (make tlc, make test-tlc).
//
// # Tests
//
// tlc_test.go runs the Go explorer and TLC on the same bounds and compares
// distinct and generated state counts and per-invariant verdicts, and
// replays traces through TLC. Without Java or tla2tools.jar (found through
// TLA2TOOLS_JAR, then ~/.cache/tla/tla2tools.jar) it skips with one line.
// docs/tla.md maps every TLA+ operator to its Go function and trace event.
package tla

//go:generate go run ./gentraces -dir traces
