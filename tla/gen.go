package tla

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

// TraceFile is one generated trace: its name under traces/ (or
// traces/mutated/), its ndjson bytes, and whether spec/ and TLC must accept
// it.
type TraceFile struct {
	Name   string
	Data   []byte
	Accept bool
	// Why says what the trace shows, or for a mutated trace what was
	// changed and why the spec must reject it.
	Why string
}

// Events counts the lines of the trace, Init included.
func (f TraceFile) Events() int { return bytes.Count(f.Data, []byte("\n")) }

// Counterexample explores cfg checking only invariant inv and returns the
// model and the behaviour that violates it.
func Counterexample(cfg spec.Config, inv string) (*spec.Model, []spec.Step, error) {
	m, err := spec.NewModel(cfg)
	if err != nil {
		return nil, nil, err
	}
	res, err := spec.Explore(m, spec.Options{Workers: 1, Invariant: inv})
	if err != nil {
		return nil, nil, err
	}
	if res.Violation == nil {
		return nil, nil, fmt.Errorf("%v: %s holds", cfg, inv)
	}
	return m, res.Violation.Trace, nil
}

// EncodeTrace writes a behaviour of m as ndjson.
func EncodeTrace(m *spec.Model, steps []spec.Step) ([]byte, error) {
	var b bytes.Buffer
	if err := m.WriteTrace(&b, steps); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MutateTrace decodes a trace, lets edit change its events, and encodes the
// result in the trace's own version with the events renumbered.
func MutateTrace(data []byte, edit func(events []trace.Event) ([]trace.Event, error)) ([]byte, error) {
	events, err := trace.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if events, err = edit(events); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	w := trace.NewWriterVersion(&b, events[0].V)
	for _, e := range events {
		if err := w.Write(e); err != nil {
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WithoutBugs is the mutation that replays a behaviour found with bug
// switches on against the fixed protocol: line 0 says no bugs.
func WithoutBugs(events []trace.Event) ([]trace.Event, error) {
	c := *events[0].Config
	c.Bugs = ""
	events[0].Config = &c
	return events, nil
}

// WrongTerm adds one to the logged currentTerm of the event at index k.
func WrongTerm(k int) func([]trace.Event) ([]trace.Event, error) {
	return func(events []trace.Event) ([]trace.Event, error) {
		if k <= 0 || k >= len(events) || events[k].State == nil {
			return nil, fmt.Errorf("no logged state at event %d", k)
		}
		s := *events[k].State
		s.CurrentTerm++
		events[k].State = &s
		return events, nil
	}
}

// SkipFirst removes the first event with the given action.
func SkipFirst(action string) func([]trace.Event) ([]trace.Event, error) {
	return func(events []trace.Event) ([]trace.Event, error) {
		for k := 1; k < len(events); k++ {
			if events[k].Action == action {
				return append(events[:k:k], events[k+1:]...), nil
			}
		}
		return nil, fmt.Errorf("no %s event", action)
	}
}

// Rename gives the servers of a version 2 trace the names names (by
// position: s1 becomes names[0]), in the config and in every field that
// names a server.
func Rename(names ...string) func([]trace.Event) ([]trace.Event, error) {
	return func(events []trace.Event) ([]trace.Event, error) {
		c := *events[0].Config
		if events[0].V != 2 || len(names) != c.Servers {
			return nil, fmt.Errorf("rename: a version 2 trace of %d servers", len(names))
		}
		to := map[string]string{"Nil": "Nil"}
		for k, n := range c.ServerNames() {
			to[n] = names[k]
		}
		c.Names = names
		events[0].Config = &c
		for k := 1; k < len(events); k++ {
			e := &events[k]
			e.Node, e.Peer = to[e.Node], to[e.Peer]
			if e.Msg != nil {
				m := *e.Msg
				m.Msource, m.Mdest = to[m.Msource], to[m.Mdest]
				e.Msg = &m
			}
			if e.State == nil {
				continue
			}
			s := *e.State
			s.VotedFor = to[s.VotedFor]
			for _, set := range []**[]string{&s.VotesResponded, &s.VotesGranted} {
				if *set != nil {
					renamed := make([]string, 0, len(**set))
					for _, n := range **set {
						renamed = append(renamed, to[n])
					}
					sort.Strings(renamed)
					*set = &renamed
				}
			}
			for _, idx := range []*map[string]int{&s.NextIndex, &s.MatchIndex} {
				if *idx != nil {
					renamed := map[string]int{}
					for n, v := range *idx {
						renamed[to[n]] = v
					}
					*idx = renamed
				}
			}
			e.State = &s
		}
		return events, nil
	}
}

// CheckGo replays a trace with spec.CheckTrace.
func CheckGo(data []byte) error {
	_, err := spec.CheckTraceReader(bytes.NewReader(data))
	return err
}

// searchStep finds, breadth first within m's bounds, a shortest behaviour
// whose last step satisfies pred.
func searchStep(m *spec.Model, maxStates int, pred func(pre *spec.State, l spec.Label, post *spec.State) bool) ([]spec.Step, error) {
	type node struct {
		state  *spec.State
		parent int
		label  spec.Label
	}
	nodes := []node{{state: m.Init(), parent: -1}}
	seen := map[uint64]bool{spec.Fingerprint(m.Encode(nil, nodes[0].state)): true}
	path := func(k int) []spec.Step {
		var steps []spec.Step
		for ; k >= 0; k = nodes[k].parent {
			steps = append(steps, spec.Step{Label: nodes[k].label, State: nodes[k].state})
		}
		for a, b := 0, len(steps)-1; a < b; a, b = a+1, b-1 {
			steps[a], steps[b] = steps[b], steps[a]
		}
		return steps
	}
	var buf []byte
	for k := 0; k < len(nodes) && len(nodes) < maxStates; k++ {
		pre := nodes[k].state
		var found []spec.Step
		m.Next(pre, func(succ spec.State, l spec.Label) {
			if found != nil || !m.InBounds(&succ) {
				return
			}
			post := succ
			if pred(pre, l, &post) {
				found = append(path(k), spec.Step{Label: l, State: &post})
				return
			}
			buf = m.Encode(buf[:0], &post)
			if fp := spec.Fingerprint(buf); !seen[fp] {
				seen[fp] = true
				nodes = append(nodes, node{state: &post, parent: k, label: l})
			}
		})
		if found != nil {
			return found, nil
		}
	}
	return nil, errors.New("no such step within the bounds")
}

// storiesDir holds spec/'s committed failure stories, relative to tla/.
const storiesDir = "../spec/testdata/counterexamples"

// stepKinds counts the distinct actions (with their branch) of a walk.
func stepKinds(steps []spec.Step) int {
	kinds := map[[2]int]bool{}
	for _, st := range steps[1:] {
		kinds[[2]int{int(st.Label.Action), int(st.Label.Branch)}] = true
	}
	return len(kinds)
}

// durableSmall is the durable setting of the counterexamples (docs/tla.md).
func durableSmall(bugs string) spec.Config {
	b, err := spec.ParseBugs(bugs)
	if err != nil {
		panic(err)
	}
	return spec.Config{Profile: spec.ProfileDurable, Servers: 2, Values: 1,
		MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 2, Crashes: 1, Corruptions: 1, Bugs: b}
}

// Generate builds every example trace: reachability witnesses and bug
// counterexamples from the explorer, random walks from the simulator, and
// the mutated traces. It checks each with spec.CheckTrace: accepted ones
// must pass and mutated ones must fail.
func Generate() ([]TraceFile, error) {
	var out []TraceFile
	add := func(name string, m *spec.Model, steps []spec.Step, why string) error {
		data, err := EncodeTrace(m, steps)
		if err != nil {
			return err
		}
		out = append(out, TraceFile{Name: name, Data: data, Accept: true, Why: why})
		return nil
	}

	// Witnesses of the reachability properties, both profiles.
	for _, cfg := range []spec.Config{
		{Profile: spec.ProfileRaft, Servers: 2, Values: 1, MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1},
		durableSmall(""),
	} {
		m, err := spec.NewModel(cfg)
		if err != nil {
			return nil, err
		}
		res, err := spec.Explore(m, spec.Options{Workers: 1})
		if err != nil {
			return nil, err
		}
		for _, r := range res.Reached {
			if w := r.Witness(); r.Found && len(w) >= 2 {
				name := fmt.Sprintf("witness-%v-%s.ndjson", cfg.Profile, r.Name)
				if err := add(name, m, w, "reaches "+r.Name+" ("+cfg.String()+")"); err != nil {
					return nil, err
				}
			}
		}
	}

	// Witnesses of the snapshot properties, which only the production
	// actions reach.
	prod := durableSmall("")
	prod.Production = true
	pm, err := spec.NewModel(prod)
	if err != nil {
		return nil, err
	}
	pres, err := spec.Explore(pm, spec.Options{Workers: 1})
	if err != nil {
		return nil, err
	}
	for _, r := range pres.Reached {
		if w := r.Witness(); r.Found && len(w) >= 2 && strings.Contains(r.Name, "Snapshot") {
			name := fmt.Sprintf("witness-production-%s.ndjson", r.Name)
			if err := add(name, pm, w, "reaches "+r.Name+" ("+prod.String()+")"); err != nil {
				return nil, err
			}
		}
	}

	// Counterexamples of the bug switches.
	cexes := map[string][]spec.Step{}
	for _, c := range []struct{ bug, inv string }{
		{"self-counts-appended", "CommittedIsDurable"},
		{"self-counts-appended", "NoAckedLoss"},
		{"follower-acks-appended", "CommittedIsDurable"},
		{"follower-acks-appended", "NoAckedLoss"},
		{"release-at-leader-commit", "CommittedIsDurable"},
		{"mark-after-cut", "CommittedIsDurable"},
	} {
		cfg := durableSmall(c.bug)
		if c.bug == "mark-after-cut" { // the persistence window is the production profile's
			cfg.Production, cfg.MaxMsgs = true, 1
		}
		m, steps, err := Counterexample(cfg, c.inv)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("cex-%s-%s.ndjson", c.bug, c.inv)
		cexes[name] = steps
		if err := add(name, m, steps, fmt.Sprintf("bug %s violates %s", c.bug, c.inv)); err != nil {
			return nil, err
		}
	}

	// Random walks, deep and with three servers: of `tried` seeded walks,
	// the `keep` that take the most kinds of steps.
	for _, w := range []struct {
		cfg         spec.Config
		tried, keep int
	}{
		{spec.Config{Profile: spec.ProfileDurable, Servers: 3, Values: 1, MaxTerm: 3, MaxLog: 2, MaxDup: 1, MaxMsgs: 3,
			Crashes: 1, Corruptions: 1}, 200, 10},
		{spec.Config{Profile: spec.ProfileRaft, Servers: 3, Values: 2, MaxTerm: 3, MaxLog: 2, MaxDup: 1, MaxMsgs: 3}, 100, 3},
		{spec.Config{Profile: spec.ProfileDurable, Servers: 3, Values: 1, MaxTerm: 4, MaxLog: 3, MaxDup: 1, MaxMsgs: 3,
			Crashes: 1, Corruptions: 1, Production: true}, 200, 4},
		// Power losses (issue 10 item 2): AMBIGUOUS boots, their grants,
		// unanimous elections.
		{spec.Config{Profile: spec.ProfileDurable, Servers: 3, Values: 1, MaxTerm: 3, MaxLog: 2, MaxDup: 1, MaxMsgs: 3,
			Crashes: 1, Corruptions: 1, PowerLosses: 3}, 200, 3},
	} {
		m, err := spec.NewModel(w.cfg)
		if err != nil {
			return nil, err
		}
		walks := make([][]spec.Step, w.tried)
		res, err := spec.Simulate(m, spec.SimOptions{Walks: w.tried, Depth: 60, Seed: 1, Workers: 1,
			OnWalk: func(k int, steps []spec.Step) { walks[k] = steps }})
		if err != nil {
			return nil, err
		}
		if res.Violation != nil {
			return nil, fmt.Errorf("%v: simulation found a violation of %s", w.cfg, res.Violation.Invariant)
		}
		order := make([]int, w.tried)
		for k := range order {
			order[k] = k
		}
		// raftspec viz draws every kept trace's receives by content
		// (viz.TestEveryKeptTraceMatchesByContent); a vote request handled
		// by a member that voted for that candidate already is a reply it
		// cannot always rebuild exactly (a leader voted for its rival after
		// a restart), so such production walks are not kept.
		if w.cfg.Production {
			order = slices.DeleteFunc(order, func(k int) bool { return revotes(walks[k]) })
		}
		sort.SliceStable(order, func(a, b int) bool { return stepKinds(walks[order[a]]) > stepKinds(walks[order[b]]) })
		profile := w.cfg.Profile.String()
		if w.cfg.Production {
			profile = "production"
		}
		if w.cfg.PowerLosses > 0 {
			profile = "power"
		}
		for _, k := range order[:w.keep] {
			name := fmt.Sprintf("walk-%s-s%d-%03d.ndjson", profile, w.cfg.Servers, k)
			why := fmt.Sprintf("simulate walk %d, seed %d, %d kinds of step (%v)", k, 1+k, stepKinds(walks[k]), w.cfg)
			if err := add(name, m, walks[k], why); err != nil {
				return nil, err
			}
		}
	}

	// The repair of a TRUNCATED member from its peers (issue 18): the
	// witnesses of its reachability properties, atomic and (the production
	// profile, spec.TestRepairProductionHolds's sub-model) split into takes
	// and counts, and the counterexample of repair-ignores-term.
	if err := addRepair(add); err != nil {
		return nil, err
	}

	// A TRUNCATED member granting a vote: legal only with the bug on.
	mv, err := spec.NewModel(spec.Config{Profile: spec.ProfileDurable, Servers: 2, Values: 1,
		MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1, Crashes: 0, Corruptions: 1, Bugs: spec.BugTruncatedMemberVotes})
	if err != nil {
		return nil, err
	}
	grant, err := searchStep(mv, 1<<20, func(pre *spec.State, l spec.Label, post *spec.State) bool {
		return l.Action == spec.ActHandleRequestVoteRequest && pre.Verdict[l.I] == spec.Truncated &&
			post.VotedFor[l.I] == l.J && pre.VotedFor[l.I] == spec.Nil
	})
	if err != nil {
		return nil, fmt.Errorf("truncated voter: %w", err)
	}
	if err := add("bug-truncated-member-votes-grant.ndjson", mv, grant,
		"with bug truncated-member-votes, a TRUNCATED member grants a vote"); err != nil {
		return nil, err
	}

	mt, err := spec.NewModel(spec.Config{Profile: spec.ProfileDurable, Servers: 2, Values: 1,
		MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1, Crashes: 1, Corruptions: 0, Bugs: spec.BugTruncationNotSynced})
	if err != nil {
		return nil, err
	}
	lost, err := searchStep(mt, 1<<20, func(pre *spec.State, l spec.Label, post *spec.State) bool {
		return l.Action == spec.ActCrash && !pre.Log[l.I].HasPrefix(post.Log[l.I])
	})
	if err != nil {
		return nil, fmt.Errorf("truncation lost: %w", err)
	}
	if err := add("bug-truncation-not-synced-lost.ndjson", mt, lost,
		"with bug truncation-not-synced, a crash brings back the entries a truncation removed"); err != nil {
		return nil, err
	}

	byName := map[string][]byte{}
	for _, f := range out {
		byName[f.Name] = f.Data
	}

	// spec's committed failure stories (scripts/bugs.sh), as sources of
	// mutations: each replayed with its bugs switched off must be rejected.
	// tlc.sh all validates the originals where they are.
	stories := []string{"truncated-member-votes.loss", "follower-acks-appended.loss",
		"candidate-advertises-learned+no-promotion-fence"}
	for _, story := range stories {
		data, err := os.ReadFile(filepath.Join(storiesDir, story+".ndjson"))
		if err != nil {
			return nil, err
		}
		byName["story:"+story] = data
	}
	mutations := []struct {
		name, from string
		edit       func([]trace.Event) ([]trace.Event, error)
		why        string
	}{
		{"wrong-term.ndjson", "witness-durable-EntryCommitted.ndjson", WrongTerm(10),
			"event 10 logs currentTerm one higher than the spec's"},
		{"skipped-step.ndjson", "witness-raft-TwoLeadersElected.ndjson", SkipFirst("Timeout"),
			"the first Timeout is left out, so the next step is not enabled"},
		{"commit-beyond-durable-majority.ndjson", "cex-self-counts-appended-CommittedIsDurable.ndjson", WithoutBugs,
			"the leader commits an entry only it has appended, not durably: legal only under bug self-counts-appended"},
		{"ack-before-fsync.ndjson", "cex-follower-acks-appended-CommittedIsDurable.ndjson", WithoutBugs,
			"a follower acknowledges an entry it has not flushed: legal only under bug follower-acks-appended"},
		{"truncated-member-votes.ndjson", "bug-truncated-member-votes-grant.ndjson", WithoutBugs,
			"a TRUNCATED member grants a vote: the settled rule forbids it until the member is repaired"},
		{"truncation-lost.ndjson", "bug-truncation-not-synced-lost.ndjson", WithoutBugs,
			"a crash brings back truncated entries: legal only under bug truncation-not-synced"},
		{"mark-lost.ndjson", "cex-mark-after-cut-CommittedIsDurable.ndjson", WithoutBugs,
			"a crash right after a corruption boots the cut log CLEAN: legal only under bug mark-after-cut"},
		{"repair-in-corruption-term.ndjson", "cex-repair-ignores-term-RepairCovers.ndjson", WithoutBugs,
			"a TRUNCATED member asks for repair in its corruption's own term: legal only under bug repair-ignores-term"},
	}
	for _, story := range stories {
		mutations = append(mutations, struct {
			name, from string
			edit       func([]trace.Event) ([]trace.Event, error)
			why        string
		}{"story-" + story + "-fixed.ndjson", "story:" + story, WithoutBugs,
			"spec's failure story " + story + " replayed with every fix on"})
	}
	// Servers with names of their own (version 2's config.names): the
	// first production walk kept.
	var renamed string
	for _, f := range out {
		if strings.HasPrefix(f.Name, "walk-production-") && (renamed == "" || f.Name < renamed) {
			renamed = f.Name
		}
	}
	named, err := MutateTrace(byName[renamed], Rename("n1", "node-7", "db.3"))
	if err != nil {
		return nil, fmt.Errorf("named: %w", err)
	}
	out = append(out, TraceFile{Name: "named-" + renamed, Data: named, Accept: true,
		Why: renamed + " with its servers named n1, node-7 and db.3"})
	for _, mu := range mutations {
		src, ok := byName[mu.from]
		if !ok {
			return nil, fmt.Errorf("mutation %s: no trace %s", mu.name, mu.from)
		}
		data, err := MutateTrace(src, mu.edit)
		if err != nil {
			return nil, fmt.Errorf("mutation %s: %w", mu.name, err)
		}
		out = append(out, TraceFile{Name: filepath.Join("mutated", mu.name), Data: data,
			Why: mu.why + " (from " + mu.from + ")"})
	}

	for _, f := range out {
		err := CheckGo(f.Data)
		switch {
		case f.Accept && err != nil:
			return nil, fmt.Errorf("%s: spec rejects a generated trace: %w", f.Name, err)
		case !f.Accept && err == nil:
			return nil, fmt.Errorf("%s: spec accepts a mutated trace", f.Name)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// addRepair adds the repair traces of Generate.
func addRepair(add func(name string, m *spec.Model, steps []spec.Step, why string) error) error {
	atomic := spec.Config{Profile: spec.ProfileDurable, Servers: 2, Values: 1,
		MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1, Corruptions: 1, Repair: true}
	prod := atomic
	prod.Production = true
	without, err := spec.ParseActions("SendSnapshot,SendRepairSnapshot,DropMessage,DuplicateMessage,StepDown,Crash")
	if err != nil {
		return err
	}
	for _, c := range []struct {
		cfg     spec.Config
		without spec.ActionSet
		profile string
	}{{atomic, spec.ActionSet{}, "durable"}, {prod, without, "production"}} {
		m, err := spec.NewModel(c.cfg)
		if err != nil {
			return err
		}
		res, err := spec.Explore(m, spec.Options{Workers: 1, Without: c.without})
		if err != nil {
			return err
		}
		if res.Violation != nil {
			return fmt.Errorf("%v: %s violated", c.cfg, res.Violation.Invariant)
		}
		for _, r := range res.Reached {
			if w := r.Witness(); r.Found && len(w) >= 2 && strings.Contains(r.Name, "Repair") {
				name := fmt.Sprintf("witness-repair-%s-%s.ndjson", c.profile, r.Name)
				if err := add(name, m, w, "reaches "+r.Name+" ("+c.cfg.String()+")"); err != nil {
					return err
				}
			}
		}
	}
	cfg := atomic
	cfg.Bugs = spec.BugRepairIgnoresTerm
	m, steps, err := Counterexample(cfg, "RepairCovers")
	if err != nil {
		return err
	}
	return add("cex-repair-ignores-term-RepairCovers.ndjson", m, steps, "bug repair-ignores-term violates RepairCovers")
}

// WriteTraces replaces the .ndjson files of dir and dir/mutated with files
// and writes dir/README.md listing them.
func WriteTraces(dir string, files []TraceFile) error {
	for _, d := range []string{dir, filepath.Join(dir, "mutated")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		old, _ := filepath.Glob(filepath.Join(d, "*.ndjson"))
		for _, p := range old {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	var idx strings.Builder
	idx.WriteString("# Example traces\n\nWritten by `go generate ./tla` (tla/gentraces); do not edit by hand.\n" +
		"`tla/tlc.sh all` and `bin/raftspec check-trace` must accept every trace here and reject every\n" +
		"trace in mutated/.\n\n| file | events | expect | what it shows |\n|---|---|---|---|\n")
	accepted := 0
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return err
		}
		expect := "reject"
		if f.Accept {
			expect = "accept"
			accepted += f.Events()
		}
		fmt.Fprintf(&idx, "| %s | %d | %s | %s |\n", f.Name, f.Events(), expect, f.Why)
	}
	fmt.Fprintf(&idx, "\n%d events in the accepted traces.\n", accepted)
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(idx.String()), 0o644)
}

// revotes reports whether a walk has a vote request handled by a member that
// had voted for that candidate already.
func revotes(steps []spec.Step) bool {
	for k := 1; k < len(steps); k++ {
		l := steps[k].Label
		if l.Action == spec.ActHandleRequestVoteRequest && steps[k-1].State.VotedFor[l.Msg.Mdest] == l.Msg.Msource {
			return true
		}
	}
	return false
}
