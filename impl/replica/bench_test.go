package replica

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// benchFollower is follower 2 of a three-voter cluster on the real disk (the
// WAL's flusher goroutine, vfs.OS), driven by hand as the leader 1 would:
// an AppendEntries in, the replica's answer out.
type benchFollower struct {
	b    *testing.B
	w    *wal.WAL
	r    *Replica
	net  *capture
	sum  uint32 // the chain value at last
	last uint64
}

func newBenchFollower(b *testing.B, bugs Bug) *benchFollower {
	w, rec, err := wal.Open(vfs.OS{}, filepath.Join(b.TempDir(), "wal"), wal.Options{Logger: quiet, SealDelay: -1})
	if err != nil {
		b.Fatal(err)
	}
	cfg := raft.Config{ID: 2, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 1 << 20, HeartbeatTick: 1,
		Rand: rand.New(rand.NewPCG(2, 1))}
	f := &benchFollower{b: b, w: w, net: &capture{}}
	if f.sum, err = w.Checksum(0); err != nil {
		b.Fatal(err)
	}
	f.r, err = New(Config{Raft: cfg, WAL: w, Recovery: rec, StateMachine: &entries{}, Transport: f.net, Logger: quiet, TestingBugs: bugs})
	if err != nil {
		b.Fatal(err)
	}
	f.await(f.idle)
	f.round(false) // term 2: the one hard-state change of the run
	return f
}

// await hands the replica WAL progress until done.
func (f *benchFollower) await(done func() bool) {
	for !done() {
		ch := f.w.Notify()
		f.r.Handle(Event{Kind: EventWAL, Progress: f.w.Progress()})
		if done() {
			return
		}
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			f.b.Fatalf("no WAL progress in 10 s: %+v", f.r.Status())
		}
	}
}

func (f *benchFollower) idle() bool { return !f.r.Status().Holding }

// acked reports whether the answer to the last entry has left.
func (f *benchFollower) acked() bool {
	for _, m := range f.net.msgs {
		if m.Type == raft.MsgAppResp && m.Success && m.MatchIndex == f.last {
			return true
		}
	}
	return false
}

// round is one replication round: an AppendEntries of one 128-byte entry
// (learning the previous entry committed when commit is set) until the
// follower's success answer for it has left and nothing is held.
func (f *benchFollower) round(commit bool) time.Duration {
	start := time.Now()
	m := Message{Message: raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: 2, PrevLogIndex: f.last}, PrevChecksum: f.sum}
	if f.last > 0 {
		m.PrevLogTerm = 2
	}
	if commit {
		m.Commit, m.LeaderCommit = f.last, f.last
	}
	e := raft.Entry{Index: f.last + 1, Term: 2, Data: make([]byte, 128)}
	rec, sum := wal.EncodeRecord(f.sum, wal.Entry{Index: e.Index, Term: e.Term, Data: e.Data})
	m.Entries, m.Records = []raft.Entry{e}, []wal.Record{rec}
	f.last, f.sum = e.Index, sum
	f.net.msgs = f.net.msgs[:0]
	f.r.Handle(Event{Kind: EventMessage, Msg: m})
	f.await(func() bool { return f.acked() && f.idle() })
	return time.Since(start)
}

// BenchmarkFollowerRound measures, side by side on the real disk, what a
// follower's replication round costs (an AppendEntries of one entry in, the
// follower's acknowledgment of it out once durable):
//   - log-round: no commit index learned, so nothing but the log is written;
//   - new-round: the previous entry learned committed, as in every round
//     under load, with the learned commit not hard state (issue 10 item 1);
//   - old-round: the same with BugLearnedCommitHardState, the rule before:
//     each learned commit written as hard state (two fdatasyncs of the
//     hard-state file) before the next input.
//
// The metrics new-round/log-round and old-round/log-round are the latency
// ratios, the three kinds interleaved in one run (three replicas, three
// WALs). impl/wal's BenchmarkFollowerRound is the same comparison at the
// WAL's level.
func BenchmarkFollowerRound(b *testing.B) {
	log, cur, old := newBenchFollower(b, 0), newBenchFollower(b, 0), newBenchFollower(b, BugLearnedCommitHardState)
	defer func() {
		for _, f := range []*benchFollower{log, cur, old} {
			_ = f.r.Close()
		}
	}()
	var logTime, newTime, oldTime time.Duration
	b.ResetTimer()
	for range b.N {
		logTime += log.round(false)
		newTime += cur.round(true)
		oldTime += old.round(true)
	}
	b.StopTimer()
	if hs := old.w.Progress().HardState; hs.Commit == 0 {
		b.Fatalf("old rule: learned commit never written as hard state: %+v", hs)
	}
	if hs := cur.w.Progress().HardState; hs.Commit != 0 {
		b.Fatalf("new rule: a learned commit written as hard state: %+v", hs)
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(logTime), "ns/log-round")
	b.ReportMetric(per(newTime), "ns/new-round")
	b.ReportMetric(per(oldTime), "ns/old-round")
	b.ReportMetric(newTime.Seconds()/logTime.Seconds(), "new-round/log-round")
	b.ReportMetric(oldTime.Seconds()/logTime.Seconds(), "old-round/log-round")
}
