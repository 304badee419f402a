package coretrace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/raft/rafttest"
	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

// The long run: a cluster of the harness takes LONG_TRACE_WRITES client
// writes (2,000 in make test; make long-trace runs 20,000) in batches,
// through message reordering, drops and duplicates, follower and leader
// crashes that lose unsynced entries, partitions and a corruption now and
// then. Its trace (version 2, servers named) is written to a file and
// checked as raftspec check-trace checks a file; then one protocol field
// of one late event is changed and the trace must be rejected at exactly
// that event. LONG_TRACE_FILE=PATH keeps the trace there.

func longWrites(t *testing.T) int {
	if s := os.Getenv("LONG_TRACE_WRITES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LONG_TRACE_WRITES=%q: want a positive number", s)
		}
		return n
	}
	return 2000
}

var longNames = map[raft.NodeID]string{1: "alpha", 2: "bravo.eu-1", 3: "charlie-3"}

// longStats counts the faults of a long run.
type longStats struct {
	followerCrashes, leaderCrashes, partitions, corruptions int
}

// longRun drives the cluster until writes proposals were accepted by a
// leader, then heals it and lets it settle.
func longRun(t *testing.T, seed uint64, writes int) (*rafttest.Cluster, int, longStats) {
	c, err := rafttest.NewCluster(rafttest.Options{N: 3, Seed: seed, CheckQuorum: true, PreVote: true,
		MsgEntriesMax: 64, InflightMsgsMax: 4, ElectionTick: 10, HeartbeatTick: 1, Trace: true, TraceNames: longNames})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x10e6))
	pick := func() raft.NodeID { return raft.NodeID(1 + rng.IntN(3)) }
	down := map[raft.NodeID]int{} // node -> rounds it stays down
	isolated := 0
	proposed := 0
	var stats longStats
	for round := 0; proposed < writes; round++ {
		if round > 50*writes {
			t.Fatalf("no progress: %d of %d writes after %d rounds", proposed, writes, round)
		}
		if l := c.Leader(); l != nil && rng.IntN(2) == 0 {
			batch := min(1+rng.IntN(8), writes-proposed)
			data := make([]string, batch)
			for k := range data {
				data[k] = fmt.Sprintf("w%d", proposed+k)
			}
			if c.Propose(l.ID, data...) == nil {
				proposed += batch
			}
		}
		for range 10 + rng.IntN(40) {
			switch r := rng.IntN(100); {
			case r < 60 && len(c.Net) > 0:
				k := rng.IntN(min(len(c.Net), 3))
				switch rng.IntN(200) {
				case 0:
					c.Drop(k)
				case 1:
					c.Duplicate(k)
				default:
					c.Deliver(k)
				}
			case r < 80:
				id := pick()
				if sn := c.Node(id); sn.Node != nil && rng.IntN(3) == 0 && sn.WAL.Log.LastIndex() > sn.WAL.Durable {
					c.FlushTo(id, sn.WAL.Durable+1+rng.Uint64N(sn.WAL.Log.LastIndex()-sn.WAL.Durable))
				} else {
					c.Flush(id)
				}
			default:
				c.Tick(pick())
			}
		}
		longFaults(t, c, rng, down, &isolated, &stats)
		if round%50 == 0 {
			c.CheckInvariants()
		}
		if len(c.Violations) > 0 {
			t.Fatalf("round %d: %v", round, c.Violations)
		}
	}
	// Faults stop: every node up, links healed, messages delivered.
	c.Heal()
	for id := range down {
		if err := c.Start(id); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		c.Stabilize(true, 50)
		if l := c.Leader(); l != nil && len(c.Net) == 0 {
			break
		}
		for _, sn := range c.Nodes {
			c.Tick(sn.ID)
		}
	}
	c.CheckInvariants()
	if len(c.Violations) > 0 {
		t.Fatal(c.Violations)
	}
	return c, proposed, stats
}

// longFaults injects this round's faults and ends those that are over.
func longFaults(t *testing.T, c *rafttest.Cluster, rng *rand.Rand, down map[raft.NodeID]int, isolated *int, stats *longStats) {
	for id, rounds := range down {
		if rounds--; rounds > 0 {
			down[id] = rounds
			continue
		}
		delete(down, id)
		if err := c.Start(id); err != nil {
			t.Fatal(err)
		}
	}
	if *isolated > 0 {
		if *isolated--; *isolated == 0 {
			c.Heal()
		}
	}
	l := c.Leader()
	if len(down) > 0 || *isolated > 0 {
		return
	}
	switch r := rng.IntN(1000); {
	case r < 20: // a follower crashes
		for _, sn := range c.Nodes {
			if sn.Node != nil && (l == nil || sn.ID != l.ID) && rng.IntN(2) == 0 {
				c.Stop(sn.ID, rng.IntN(3)-1)
				down[sn.ID] = 1 + rng.IntN(8)
				stats.followerCrashes++
				return
			}
		}
	case r < 26 && l != nil: // the leader crashes
		c.Stop(l.ID, rng.IntN(3)-1)
		down[l.ID] = 1 + rng.IntN(8)
		stats.leaderCrashes++
	case r < 31: // a partition
		c.Isolate(raft.NodeID(1 + rng.IntN(3)))
		*isolated = 1 + rng.IntN(8)
		stats.partitions++
	case r < 34: // a follower's disk corrupts inside its durable prefix
		for _, sn := range c.Nodes {
			if sn.Node != nil && (l == nil || sn.ID != l.ID) && sn.WAL.Durable > 0 && !anyTruncated(c) {
				if c.Corrupt(sn.ID, rng.Uint64N(sn.WAL.Durable)) == nil {
					stats.corruptions++
				}
				return
			}
		}
	}
}

func anyTruncated(c *rafttest.Cluster) bool {
	for _, sn := range c.Nodes {
		if sn.WAL.HS.TruncatedAtTerm != 0 {
			return true
		}
	}
	return false
}

// TestLongRunTraced: the long run's trace is accepted, and rejected at the
// event where one protocol field is changed.
func TestLongRunTraced(t *testing.T) {
	writes := longWrites(t)
	start := time.Now()
	c, proposed, stats := longRun(t, 1, writes)
	var committed, term uint64
	for _, sn := range c.Nodes {
		st := sn.Node.Status()
		committed, term = max(committed, st.Commit), max(term, st.HardState.Term)
	}
	run := time.Since(start)
	path := os.Getenv("LONG_TRACE_FILE") // to keep the trace
	if path == "" {
		path = filepath.Join(t.TempDir(), "long.ndjson")
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := trace.NewWriter(f)
	for _, e := range c.Events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	events := len(c.Events)
	c.Events = nil
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	n, err := spec.CheckTraceReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the long run's trace is rejected after %d events: %v", n, err)
	}
	if n != events {
		t.Fatalf("checked %d events of %d", n, events)
	}
	t.Logf("%d writes proposed, commit index %d, term %d, %+v; %d events, %d MB of trace: run %v, check-trace %v",
		proposed, committed, term, stats, events, len(data)>>20, run.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if committed < uint64(writes)*3/4 {
		t.Errorf("only %d of %d writes committed", committed, writes)
	}
	if stats.leaderCrashes == 0 || stats.followerCrashes == 0 || stats.partitions == 0 || term < 3 {
		t.Errorf("a tame run: %+v, term %d", stats, term)
	}

	// One protocol field of one late event changed: the value of an entry
	// a follower appends.
	k, line := lateLine(t, data, `"branch":"append"`, `"logAppend":[{`)
	mutated := otherFirstValue(line)
	err = checkWithLine(data, k, mutated)
	var mm *spec.TraceMismatch
	if !errors.As(err, &mm) || mm.Seq != k {
		t.Fatalf("with event %d changed: %v; want a mismatch at event %d", k, err, k)
	}
	t.Logf("event %d changed: %s", k, strings.SplitN(err.Error(), "\n", 2)[0])
}

// lateLine finds the last line, in the last tenth of the trace, that holds
// every marker; it returns its index (the event's seq) and text.
func lateLine(t *testing.T, data []byte, markers ...string) (int, string) {
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	for k := len(lines) - 1; k >= len(lines)*9/10; k-- {
		ok := true
		for _, m := range markers {
			ok = ok && bytes.Contains(lines[k], []byte(m))
		}
		if ok {
			return k, string(lines[k])
		}
	}
	t.Fatalf("no late event with %v", markers)
	return 0, ""
}

// otherFirstValue gives the first entry the line's logAppend appends
// another value in 1..TraceValues.
func otherFirstValue(line string) string {
	head, rest, _ := strings.Cut(line, `"values":[`)
	k := strings.IndexAny(rest, ",]")
	v, _ := strconv.Atoi(rest[:k])
	return head + `"values":[` + strconv.Itoa(1+v%raft.TraceValues) + rest[k:]
}

// checkWithLine checks data with line k replaced by line.
func checkWithLine(data []byte, k int, line string) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, trace.MaxLineBytes)
	var start, end int
	for n := 0; n <= k && sc.Scan(); n++ {
		start, end = end, end+len(sc.Bytes())+1
	}
	r := io.MultiReader(bytes.NewReader(data[:start]), strings.NewReader(line+"\n"), bytes.NewReader(data[end:]))
	_, err := spec.CheckTraceReader(r)
	return err
}
