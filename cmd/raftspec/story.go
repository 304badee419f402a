package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/spec"
)

// storyCommand replays a failure story of spec/testdata/stories (the
// format spec/story_test.go reads: a config line, one step per line, an
// expect line) under its bug switches, writes it as a trace, checks that
// it breaks the invariant it expects, and replays it with every fix on,
// where some step must be impossible or the invariant hold at the end.
func storyCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("story", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: raftspec story [-trace OUT.ndjson] [-html OUT.html] STORY.txt\n\n"+
			"Replays a failure story (spec/testdata/stories/*.txt) step by step under its bug switches,\n"+
			"then with every fix on. The last line is\n"+
			"  steps=N result=violation invariant=NAME trace=PATH fixed=blocked|holds")
		fs.PrintDefaults()
	}
	tracePath := fs.String("trace", "", "write the story as a trace here (default: a new file in the temp dir)")
	htmlPath := fs.String("html", "", "also draw it (raftspec viz) into this file")
	quiet := fs.Bool("q", false, "do not print the steps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError(2)
	}
	st, err := parseStory(fs.Arg(0))
	if err != nil {
		return err
	}
	m, err := spec.NewModel(st.cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "raftspec story: %s: %v\n", fs.Arg(0), m.Config)
	steps, err := st.run(m)
	if !*quiet {
		for k, s := range steps[1:] {
			fmt.Fprintf(stderr, "  %2d: %v\n", k+1, s.Label)
		}
	}
	if err != nil {
		return fmt.Errorf("story: under %v: %w", st.cfg.Bugs, err)
	}
	inv, _ := m.InvariantsFor(st.expect)
	detail := inv[0].Check(m, steps[len(steps)-1].State)
	if detail == "" {
		fmt.Fprintf(stderr, "Error: the story ends without breaking %s\n", st.expect)
		return exitError(1)
	}
	fmt.Fprintf(stderr, "invariant %s is violated: %s\n", st.expect, detail)
	path := *tracePath
	if path == "" {
		f, err := os.CreateTemp("", "raftspec-story-*.ndjson")
		if err != nil {
			return err
		}
		path = f.Name()
		f.Close()
	}
	if err := m.WriteTraceFile(path, steps); err != nil {
		return err
	}
	fmt.Fprintln(stderr, drawHint(path))
	fixed, ok := st.fixed(stderr)
	if *htmlPath != "" {
		if err := vizCommand([]string{"-o", *htmlPath, "-title", filepath.Base(fs.Arg(0)) + ": " + st.expect + " under " + st.cfg.Bugs.String(), path}, io.Discard, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "steps=%d result=violation invariant=%s trace=%s fixed=%s\n", len(steps)-1, st.expect, path, fixed)
	if !ok {
		return exitError(1)
	}
	return nil
}

// fixed replays the story with every fix on: "blocked" when a step is
// impossible, "holds" when it runs to its end without the violation.
func (st *story) fixed(stderr io.Writer) (string, bool) {
	c := st.cfg
	c.Bugs = 0
	fm, err := spec.NewModel(c)
	if err != nil {
		fmt.Fprintln(stderr, "with every fix on:", err)
		return "error", false
	}
	fsteps, err := st.run(fm)
	if err != nil {
		fmt.Fprintf(stderr, "with every fix on: %v\n", err)
		return "blocked", true
	}
	inv, _ := fm.InvariantsFor(st.expect)
	if d := inv[0].Check(fm, fsteps[len(fsteps)-1].State); d != "" {
		fmt.Fprintf(stderr, "with every fix on the story still breaks %s: %s\n", st.expect, d)
		return "broken", false
	}
	fmt.Fprintf(stderr, "with every fix on: the story runs to its end and %s holds\n", st.expect)
	return "holds", true
}

// The story format is spec/story_test.go's (its TestStories runs every
// story under go test); this reader takes the same lines through spec's
// public API.

type storyLine struct {
	no     int
	fields []string
}

type story struct {
	cfg    spec.Config
	lines  []storyLine
	expect string
}

func parseStory(path string) (*story, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st := &story{cfg: spec.Config{Profile: spec.ProfileDurable, Servers: 3, Values: 1, MaxTerm: 200, MaxLog: 100, MaxDup: 200, MaxMsgs: 1 << 20}}
	sc := bufio.NewScanner(f)
	for no := 1; sc.Scan(); no++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		switch {
		case len(fields) == 0:
		case fields[0] == "config":
			if err := st.config(fields[1:]); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, no, err)
			}
		case fields[0] == "expect":
			if len(fields) != 2 {
				return nil, fmt.Errorf("%s:%d: want: expect INVARIANT", path, no)
			}
			st.expect = fields[1]
		default:
			st.lines = append(st.lines, storyLine{no: no, fields: fields})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if st.expect == "" {
		return nil, fmt.Errorf("%s: no expect line", path)
	}
	return st, nil
}

func (st *story) config(kvs []string) error {
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		if k == "bugs" {
			b, err := spec.ParseBugs(v)
			if err != nil {
				return err
			}
			st.cfg.Bugs = b
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("config %s: %w", kv, err)
		}
		switch k {
		case "servers":
			st.cfg.Servers = n
		case "values":
			st.cfg.Values = n
		case "crashes":
			st.cfg.Crashes = n
		case "corruptions":
			st.cfg.Corruptions = n
		case "production":
			st.cfg.Production = n != 0
		case "powerlosses":
			st.cfg.PowerLosses = n
		default:
			return fmt.Errorf("unknown config %q", k)
		}
	}
	return nil
}

// run takes the story's steps from Init; it fails at the first step that
// is not possible (zero or several successors).
func (st *story) run(m *spec.Model) ([]spec.Step, error) {
	s := m.Init()
	steps := []spec.Step{{State: s}}
	for _, ln := range st.lines {
		l, filter, err := st.label(m, s, ln)
		if err != nil {
			return steps, err
		}
		var got []spec.Step
		m.Step(s, l, func(n spec.State, gl spec.Label) {
			if filter == nil || filter(&n) {
				kept := n
				got = append(got, spec.Step{Label: gl, State: &kept})
			}
		})
		if len(got) != 1 {
			return steps, fmt.Errorf("line %d %q: %d possible successors, want 1", ln.no, strings.Join(ln.fields, " "), len(got))
		}
		steps = append(steps, got[0])
		s = got[0].State
	}
	return steps, nil
}

var storyTypes = map[string]spec.MType{"RequestVoteRequest": spec.RequestVoteRequest, "RequestVoteResponse": spec.RequestVoteResponse,
	"AppendEntriesRequest": spec.AppendEntriesRequest, "AppendEntriesResponse": spec.AppendEntriesResponse}

var handlerTypes = map[spec.Action]spec.MType{spec.ActHandleRequestVoteRequest: spec.RequestVoteRequest,
	spec.ActHandleRequestVoteResponse: spec.RequestVoteResponse, spec.ActHandleAppendEntriesRequest: spec.AppendEntriesRequest,
	spec.ActHandleAppendEntriesResponse: spec.AppendEntriesResponse}

// label parses a step into the label it takes and, where the label leaves
// a choice open, a filter on the successor.
func (st *story) label(m *spec.Model, s *spec.State, ln storyLine) (spec.Label, func(*spec.State) bool, error) {
	f := ln.fields
	fail := func(format string, args ...any) (spec.Label, func(*spec.State) bool, error) {
		return spec.Label{}, nil, fmt.Errorf("line %d %q: %s", ln.no, strings.Join(f, " "), fmt.Sprintf(format, args...))
	}
	a, ok := spec.ParseAction(f[0])
	if !ok || len(f) < 2 {
		return fail("unknown action")
	}
	server := func(name string) spec.ServerID {
		for _, id := range m.Servers() {
			if name == id.String() {
				return id
			}
		}
		return spec.Nil
	}
	l := spec.Label{Action: a, I: server(f[1])}
	if l.I == spec.Nil {
		return fail("bad server %q", f[1])
	}
	switch {
	case a.ReceivesMessage():
		if len(f) < 4 || f[2] != "<-" {
			return fail("want: %s DEST <- SOURCE [TYPE] [field=value ...]", a)
		}
		src := server(f[3])
		var want []string
		mtype := handlerTypes[a]
		for _, x := range f[4:] {
			if t, ok := storyTypes[x]; ok {
				mtype = t
			} else {
				want = append(want, x)
			}
		}
		var found []spec.Message
		for _, e := range s.Messages {
			if e.M.Msource == src && e.M.Mdest == l.I && (mtype == 0 || e.M.Mtype == mtype) && messageHas(m, e.M, want) {
				found = append(found, e.M)
			}
		}
		if len(found) != 1 {
			return fail("%d matching messages in the bag", len(found))
		}
		l.Msg, l.J = found[0], src
	case a == spec.ActRequestVote || a == spec.ActAppendEntries:
		if len(f) != 3 {
			return fail("want: %s I J", a)
		}
		l.J = server(f[2])
	case a == spec.ActClientRequest || a == spec.ActCrash || a == spec.ActCorrupt || a == spec.ActPowerLoss:
		if len(f) != 3 && !(len(f) > 3 && a != spec.ActClientRequest) {
			return fail("want: %s I N, or Crash/Corrupt I CUT [learned=N] [term=N] [verdict=V]", a)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 || n > 255 {
			return fail("%q is not a number of 0..255", f[2])
		}
		l.Value, l.Cut = uint8(n), uint8(n)
		if len(f) > 3 {
			filter, err := restartFilter(l.I, f[3:])
			if err != nil {
				return fail("%v", err)
			}
			return l, filter, nil
		}
	}
	return l, nil, nil
}

// restartFilter picks, among the outcomes of a restart of i (the production
// profile's persistence window offers several disk images), those with the
// given learnedCommit, currentTerm or verdict (spec/story_test.go's).
func restartFilter(i spec.ServerID, kvs []string) (func(*spec.State) bool, error) {
	var preds []func(*spec.State) bool
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		switch {
		case k == "learned" && err == nil:
			preds = append(preds, func(s *spec.State) bool { return int(s.LearnedCommit[i]) == n })
		case k == "term" && err == nil:
			preds = append(preds, func(s *spec.State) bool { return int(s.CurrentTerm[i]) == n })
		case k == "verdict" && (v == "CLEAN" || v == "TRUNCATED"):
			preds = append(preds, func(s *spec.State) bool { return s.Verdict[i].String() == v })
		default:
			return nil, fmt.Errorf("want learned=N, term=N or verdict=CLEAN|TRUNCATED, got %q", kv)
		}
	}
	return func(s *spec.State) bool {
		for _, p := range preds {
			if !p(s) {
				return false
			}
		}
		return true
	}, nil
}

// messageHas checks field=value pairs against the message's trace form.
func messageHas(m *spec.Model, msg spec.Message, want []string) bool {
	t := m.TraceMessage(msg)
	fields := map[string]string{
		"mterm": strconv.Itoa(t.Mterm), "mprevLogIndex": strconv.Itoa(t.MprevLogIndex),
		"mentries": strconv.Itoa(len(t.Mentries)), "mcommitIndex": strconv.Itoa(t.McommitIndex),
		"mmatchIndex": strconv.Itoa(t.MmatchIndex), "msuccess": strconv.FormatBool(t.Msuccess),
		"mvoteGranted": strconv.FormatBool(t.MvoteGranted), "mlastLogIndex": strconv.Itoa(t.MlastLogIndex),
	}
	if t.MleaderCommit != nil {
		fields["mleaderCommit"] = strconv.Itoa(*t.MleaderCommit)
	}
	for _, kv := range want {
		k, v, _ := strings.Cut(kv, "=")
		if fields[k] != v {
			return false
		}
	}
	return true
}
