package spec

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// TLC's figures for Ongaro's raft.tla (the second row: tla/MCSymmetry.tla,
// tla's TestTLCSymmetry) under the CONSTRAINT of docs/explorer.md with
// SYMMETRY (model values for Server and Value; docs/explorer.md,
// "Symmetry", has the module and configs). "servers" is
// Permutations(Server); "servers,values" the group that Permutations(Server)
// and Permutations(Value) compose to. TLC ran with one worker: with more,
// its depth varies from run to run (the counts do not).
var tlcSymmetricCounts = []struct {
	cfg                 Config
	values              bool
	distinct, generated int64
	depth               int
	long                bool
}{
	{Config{Profile: ProfileRaft, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 2}, false, 7651, 76636, 32, false},
	{Config{Profile: ProfileRaft, Servers: 2, Values: 2, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 2}, true, 7651, 78542, 32, false},
	{Config{Profile: ProfileRaft, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 2, MaxMsgs: 2}, false, 41983, 443158, 34, false},
	{Config{Profile: ProfileRaft, Servers: 2, Values: 2, MaxTerm: 2, MaxLog: 2, MaxDup: 1, MaxMsgs: 2}, false, 64549, 687729, 43, false},
	{Config{Profile: ProfileRaft, Servers: 2, Values: 2, MaxTerm: 2, MaxLog: 2, MaxDup: 1, MaxMsgs: 2}, true, 34349, 364982, 43, false},
	{Config{Profile: ProfileRaft, Servers: 3, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 1}, false, 397346, 4702217, 53, true},
}

func TestSymmetryMatchesTLC(t *testing.T) {
	for _, tc := range tlcSymmetricCounts {
		name := tc.cfg.String() + " servers"
		if tc.values {
			name += ",values"
		}
		t.Run(name, func(t *testing.T) {
			if tc.long && testing.Short() {
				t.Skip("long: 400k states")
			}
			m, err := NewModel(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Explore(m, Options{Workers: 2, Symmetry: true, SymmetryValues: tc.values})
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation != nil {
				t.Fatalf("violation %s: %s", res.Violation.Invariant, res.Violation.Detail)
			}
			if res.Distinct != tc.distinct || res.Generated != tc.generated || res.Depth != tc.depth {
				t.Fatalf("distinct=%d generated=%d depth=%d, TLC says %d %d %d",
					res.Distinct, res.Generated, res.Depth, tc.distinct, tc.generated, tc.depth)
			}
		})
	}
}

// reachable enumerates every in-bounds reachable state of a small model
// without the explorer (a map of plain encodings), for the tests that
// check the explorer's reductions against it.
func reachable(t *testing.T, m *Model) []*State {
	t.Helper()
	init := m.Init()
	seen := map[string]bool{string(m.Encode(nil, init)): true}
	out := []*State{init}
	for k := 0; k < len(out); k++ {
		m.Next(out[k], func(n State, _ Label) {
			if !m.InBounds(&n) {
				return
			}
			enc := string(m.Encode(nil, &n))
			if !seen[enc] {
				seen[enc] = true
				out = append(out, &n)
			}
		})
		if len(out) > 300_000 {
			t.Fatal("model too large for reachable")
		}
	}
	return out
}

// TestSymmetryCountsOrbits checks, on both profiles and the production
// actions, that the symmetric explorer counts exactly the classes of the
// states the plain search reaches, each reduced to one representative.
func TestSymmetryCountsOrbits(t *testing.T) {
	for _, cfg := range []Config{
		{Profile: ProfileRaft, Servers: 2, Values: 2, MaxTerm: 2, MaxLog: 2, MaxDup: 1, MaxMsgs: 2},
		smallDurable(0),
		{Profile: ProfileDurable, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 1, Crashes: 1, Corruptions: 1, Production: true}, // (log 2: 369,876 states since the persistence window)
		{Profile: ProfileDurable, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 2, MaxDup: 1, MaxMsgs: 1, Crashes: 1, Bugs: BugTruncationNotSynced},
		// Membership: configuration entries name servers (renameConfig).
		{Profile: ProfileDurable, Servers: 2, Values: 2, MaxTerm: 3, MaxLog: 2, MaxDup: 1, MaxMsgs: 1, Membership: true},
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			m, err := NewModel(cfg)
			if err != nil {
				t.Fatal(err)
			}
			states := reachable(t, m)
			for _, values := range []bool{false, true} {
				c := newCanonicalizer(m, true, values, false)
				classes := map[string]bool{}
				for _, s := range states {
					classes[string(c.encode(nil, s))] = true
				}
				res, err := Explore(m, Options{Workers: 2, Symmetry: true, SymmetryValues: values})
				if err != nil || res.Violation != nil {
					t.Fatalf("explore: %v %+v", err, res.Violation)
				}
				if res.Distinct != int64(len(classes)) {
					t.Errorf("values=%v: explorer %d distinct, %d classes among %d states", values, res.Distinct, len(classes), len(states))
				}
			}
		})
	}
}

// allRenamings lists every renaming of the model's servers and values.
func allRenamings(m *Model) []renaming {
	var out []renaming
	forEachPermutation(len(m.servers), func(p []int) {
		var r renaming
		for k, i := range m.servers {
			r.srv[i] = m.servers[p[k]]
		}
		forEachPermutation(len(m.values), func(q []int) {
			r.val = make([]uint8, len(m.values)+1)
			for k, v := range m.values {
				r.val[v] = m.values[q[k]]
			}
			out = append(out, r)
		})
	})
	return out
}

// TestCanonicalIsClassInvariant renames states of walks by every renaming
// and checks that each gets its class's encoding, with and without merging,
// and that a renamed state is a state of the model (it round-trips through
// the encoding, passes TypeOK, and renaming back gives the state back).
func TestCanonicalIsClassInvariant(t *testing.T) {
	for _, cfg := range []Config{
		{Profile: ProfileDurable, Servers: 3, Values: 2, MaxTerm: 3, MaxLog: 2, MaxDup: 2, MaxMsgs: 3, Crashes: 1, Corruptions: 1},
		{Profile: ProfileDurable, Servers: 3, Values: 2, MaxTerm: 3, MaxLog: 3, MaxDup: 2, MaxMsgs: 3, Crashes: 1, Corruptions: 1, Production: true},
		{Profile: ProfileDurable, Servers: 4, Values: 1, MaxTerm: 3, MaxLog: 2, MaxDup: 1, MaxMsgs: 3, Crashes: 2, Bugs: BugTruncationNotSynced},
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			m, err := NewModel(cfg)
			if err != nil {
				t.Fatal(err)
			}
			renamings := allRenamings(m)
			renamer := newCanonicalizer(m, true, true, false)
			sym := newCanonicalizer(m, true, true, false)
			symMerged := newCanonicalizer(m, true, true, true)
			checked := 0
			_, err = Simulate(m, SimOptions{Walks: 20, Depth: 60, Seed: 3, OnWalk: func(_ int, steps []Step) {
				for k := 0; k < len(steps) && !t.Failed(); k += 7 {
					s := steps[k].State
					want := string(sym.encode(nil, s))
					wantMerged := string(symMerged.encode(nil, s))
					for _, r := range renamings {
						rs := renamedCopy(renamer, s, &r)
						if got := string(sym.encode(nil, rs)); got != want {
							t.Errorf("after %v, renamed by %v: another class", steps[k].Label, r)
						}
						if got := string(symMerged.encode(nil, rs)); got != wantMerged {
							t.Errorf("after %v, renamed by %v: another merged class", steps[k].Label, r)
						}
						enc := m.Encode(nil, rs)
						back, err := m.Decode(string(enc))
						if err != nil || !bytes.Equal(m.Encode(nil, back), enc) {
							t.Errorf("renamed state does not round-trip: %v", err)
						}
						if d := TypeOK(m, rs); d != "" {
							t.Errorf("renamed state fails TypeOK: %s", d)
						}
						inv := inverse(m, &r)
						if !bytes.Equal(m.Encode(nil, renamedCopy(renamer, rs, &inv)), m.Encode(nil, s)) {
							t.Errorf("renaming back by %v does not give the state back", inv)
						}
						checked++
					}
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			if checked < 1000 {
				t.Errorf("only %d renamed states checked", checked)
			}
		})
	}
}

func renamedCopy(c *canonicalizer, s *State, r *renaming) *State {
	var dst State
	c.rename(&dst, s, r)
	dst.Messages = slices.Clone(dst.Messages)
	dst.Elections = slices.Clone(dst.Elections)
	dst.AllLogs = slices.Clone(dst.AllLogs)
	return &dst
}

func inverse(m *Model, r *renaming) renaming {
	var inv renaming
	for _, i := range m.servers {
		inv.srv[r.srv[i]] = i
	}
	if r.val != nil {
		inv.val = make([]uint8, len(r.val))
		for _, v := range m.values {
			inv.val[r.val[v]] = v
		}
	}
	return inv
}

// TestRenameCoversState fails when State or Message gains a field: rename
// (symmetry.go) must then rename it, or the new field must be added here
// as one that names no server and no value.
func TestRenameCoversState(t *testing.T) {
	known := map[reflect.Type][]string{
		reflect.TypeOf(State{}): {"Messages", "Elections", "AllLogs", "CurrentTerm", "State", "VotedFor", "Log",
			"CommitIndex", "VotesResponded", "VotesGranted", "VoterLog", "NextIndex", "MatchIndex", "DurableLen",
			"LearnedCommit", "Verdict", "TruncatedAtTerm", "StaleLog", "Committed", "CrashesLeft", "CorruptionsLeft", "BadCommitsLeft",
			"BatchStart", "VotesAmbiguous", "Damaged", "PowerLossesLeft", "Persisted", "Held", "StaleDurable", "RepairFrom", "Repairs", "Wipe"},
		reflect.TypeOf(Message{}): {"Mtype", "Mterm", "MlastLogTerm", "MlastLogIndex", "MprevLogIndex", "MprevLogTerm",
			"Mentries", "Mlog", "McommitIndex", "MleaderCommit", "MvoteGranted", "Msuccess", "MmatchIndex", "Msource", "Mdest", "Mambiguous"},
		reflect.TypeOf(Election{}):       {"Eterm", "Eleader", "Elog", "Evotes", "EvoterLog"},
		reflect.TypeOf(CommittedEntry{}): {"Index", "Term", "CommitTerm", "Config"}, // Config: renameConfig
	}
	for typ, want := range known {
		var got []string
		for k := 0; k < typ.NumField(); k++ {
			got = append(got, typ.Field(k).Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v has fields %v; symmetry.go renames %v: rename the new ones there (and merge them if nothing reads them), then list them here", typ, got, want)
		}
	}
}

// TestSymmetricCounterexamplesReplay finds the failure stories with
// symmetry and with merging and checks that each counterexample, and each
// witness, is a behaviour of the spec (CheckTrace replays it) ending in a
// state that breaks the invariant: the explorer searched representatives,
// the trace is not made of them.
func TestSymmetricCounterexamplesReplay(t *testing.T) {
	for _, opt := range []Options{{Symmetry: true}, {Symmetry: true, Merge: true}, {Merge: true}} {
		for _, bug := range []Bug{BugSelfCountsAppended, BugFollowerAcksAppended, BugReleaseAtLeaderCommit} {
			m, err := NewModel(smallDurable(bug))
			if err != nil {
				t.Fatal(err)
			}
			opt.Workers = 2
			res, err := Explore(m, opt)
			if err != nil {
				t.Fatal(err)
			}
			v := res.Violation
			if v == nil || v.Invariant != "CommittedIsDurable" {
				t.Fatalf("%v %+v: got %+v, want a CommittedIsDurable violation", bug, opt, v)
			}
			last := v.Trace[len(v.Trace)-1].State
			if d := CommittedIsDurable(m, last); d == "" || d != v.Detail {
				t.Errorf("%v: the replayed last state gives %q, the violation says %q", bug, d, v.Detail)
			}
			checkSteps(t, m, v.Trace)
		}
	}
	m, err := NewModel(smallDurable(0))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explore(m, Options{Workers: 2, Symmetry: true, Merge: true})
	if err != nil || res.Violation != nil {
		t.Fatalf("%v %+v", err, res.Violation)
	}
	for _, r := range res.Reached {
		if r.Found {
			checkSteps(t, m, r.Witness())
		}
	}
}

// BenchmarkExploreSymmetric is BenchmarkExploreRaft3 with symmetry (and
// with merging): 397,346 classes of its 2,379,781 states.
func BenchmarkExploreSymmetric(b *testing.B) {
	m, err := NewModel(tlcRaftCounts[2].cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, opt := range []Options{{Symmetry: true}, {Symmetry: true, Merge: true}} {
		b.Run(fmt.Sprintf("merge=%v", opt.Merge), func(b *testing.B) {
			for b.Loop() {
				opt.Workers = 1
				res, err := Explore(m, opt)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.Distinct)/res.Elapsed.Seconds(), "distinct/s")
				b.ReportMetric(float64(res.Generated)/res.Elapsed.Seconds(), "generated/s")
			}
		})
	}
}
