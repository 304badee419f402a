package raft_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/raft/rafttest"
	"github.com/durableraft/durableraft/trace"
)

// memorySink keeps a node's events.
type memorySink struct{ events []trace.Event }

func (s *memorySink) Event(e trace.Event) { s.events = append(s.events, e) }

// TestTraceAnyNodeIDs: tracing takes any node ids, named by
// Config.TraceNames or s<id>; the names must be valid trace names, one per
// node.
func TestTraceAnyNodeIDs(t *testing.T) {
	voters := []raft.NodeID{100, 2000, 7}
	names := map[raft.NodeID]string{100: "alpha", 2000: "db-2000.eu"}
	cfg := raft.Config{ID: 100, Voters: voters, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{},
		Storage: raft.NewMemoryStorage(), Trace: &memorySink{}, TraceNames: names}
	n, err := raft.NewNode(cfg, raft.Boot{})
	if err != nil {
		t.Fatalf("ids above 9 with tracing: %v", err)
	}
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	sink := cfg.Trace.(*memorySink)
	var peers []string
	for _, e := range sink.events {
		if e.Node != "alpha" {
			t.Errorf("event %s on %q, want alpha", e.Action, e.Node)
		}
		if e.Action == "RequestVote" {
			peers = append(peers, e.Peer)
		}
	}
	slices.Sort(peers)
	if want := []string{"alpha", "db-2000.eu", "s7"}; !slices.Equal(peers, want) {
		t.Errorf("RequestVote peers %v, want %v", peers, want)
	}
	tc, err := raft.TraceConfig(raft.TraceParams{Voters: voters, Names: names, Crashes: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tc.Names, []string{"alpha", "db-2000.eu", "s7"}) || tc.Crashes != 3 || tc.Corruptions != raft.DefaultTraceBudget {
		t.Errorf("TraceConfig: %+v", tc)
	}
	for name, bad := range map[string]map[raft.NodeID]string{
		"Nil":        {7: "Nil"},
		"space":      {7: "db 7"},
		"empty":      {7: ""},
		"same name":  {7: "alpha", 100: "alpha"},
		"like s<id>": {100: "s7"},
	} {
		c := cfg
		c.TraceNames = bad
		if _, err := raft.NewNode(c, raft.Boot{}); err == nil {
			t.Errorf("%s: names %v accepted", name, bad)
		}
		if _, err := raft.TraceConfig(raft.TraceParams{Voters: voters, Names: bad}); err == nil {
			t.Errorf("%s: TraceConfig accepts names %v", name, bad)
		}
	}
	if _, err := raft.TraceConfig(raft.TraceParams{Voters: voters, Crashes: -1}); err == nil {
		t.Error("a negative budget accepted")
	}
}

type seeded struct{}

func (seeded) Uint64N(n uint64) uint64 { return n / 2 }

// TestTraceLogChanges: the core's trace is version 2, the strict decoder
// accepts it, and each node's log rebuilt from the logged changes
// (trace.Apply) is the node's log: at the end of a run with elections,
// batches, conflicts, crashes and corruptions, every running node's log
// is, entry for entry (term and value), what its storage holds.
func TestTraceLogChanges(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		o := rafttest.DefaultRandom(seed)
		c, err := rafttest.RunRandom(o)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		var b bytes.Buffer
		w := trace.NewWriter(&b)
		for _, e := range c.Events {
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		events, err := trace.Decode(&b)
		if err != nil {
			t.Fatalf("seed %d: the decoder rejects the core's trace: %v", seed, err)
		}
		logs := map[string][]trace.Entry{}
		for _, e := range events[1:] {
			if e.State != nil {
				if logs[e.Node], err = trace.Apply(logs[e.Node], e.State); err != nil {
					t.Fatalf("seed %d event %d: %v", seed, e.Seq, err)
				}
			}
		}
		for _, sn := range c.Nodes {
			if sn.Node == nil {
				continue
			}
			name := raft.TraceName(nil, sn.ID)
			got := logs[name]
			st := sn.WAL.Log
			if uint64(len(got)) != st.LastIndex() {
				t.Fatalf("seed %d: %s logged %d entries, storage has %d", seed, name, len(got), st.LastIndex())
			}
			ents, err := st.Entries(1, st.LastIndex()+1, 1<<40)
			if err != nil {
				t.Fatal(err)
			}
			for k, e := range ents {
				if want := (trace.Entry{Term: int(e.Term), Value: value(e.Data)}); got[k] != want {
					t.Fatalf("seed %d: %s entry %d logged %+v, storage %+v", seed, name, k+1, got[k], want)
				}
			}
		}
	}
}

// value is the core's traceValue (FNV-1a into 1..TraceValues).
func value(data []byte) int {
	h := uint32(2166136261)
	for _, b := range data {
		h ^= uint32(b)
		h *= 16777619
	}
	return 1 + int(h%raft.TraceValues)
}
