package spec

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Stories are failure stories written step by step in testdata/stories,
// for behaviours too deep for random walks to find and short enough to
// read. Each names the bug switches it needs, runs under them to the
// violation it expects, and is then replayed with every fix on, where some
// step must no longer be possible or the invariant must hold at the end.
//
// Syntax, one step per line ('#' starts a comment):
//
//	config servers=3 values=1 crashes=0 corruptions=1 production=0 bugs=truncated-member-votes
//	Timeout s1                      # an action of one server
//	RequestVote s1 s2               # i j
//	ClientRequest s1 1              # i value
//	Crash s2 0 / Corrupt s2 0       # i cut (PowerLoss s2 0 too)
//	Crash s2 0 learned=0 term=2     # and the learnedCommit, term or verdict
//	                                # it brings back (production=1: a restart
//	                                # may bring back a lower learnedCommit, and
//	                                # inside a persistence window an older
//	                                # hard state)
//	Persist s1                      # production=1: s1's window ends
//	HandleRequestVoteRequest s2 <- s1 [mterm=2 ...]
//	                                # a message action: the one message of the
//	                                # bag from s1 to s2 that the handler takes
//	                                # and that has the given fields
//	UpdateTerm s2 <- s1 RequestVoteRequest
//	expect NoAckedLoss              # the last line: this invariant breaks here
func TestStories(t *testing.T) {
	paths, err := filepath.Glob("testdata/stories/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no stories: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			st, err := parseStory(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewModel(st.cfg)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := st.run(m)
			if err != nil {
				t.Fatalf("under %v: %v", st.cfg.Bugs, err)
			}
			last := steps[len(steps)-1].State
			inv, _ := m.InvariantsFor(st.expect)
			if detail := inv[0].Check(m, last); detail == "" {
				t.Fatalf("the story ends without breaking %s", st.expect)
			} else {
				t.Logf("%s: %s", st.expect, detail)
			}
			checkSteps(t, m, steps)

			fixed := st.cfg
			fixed.Bugs = 0
			fm, err := NewModel(fixed)
			if err != nil {
				t.Fatal(err)
			}
			// With every fix on, some step is impossible, or the story
			// runs to its end without breaking the invariant.
			fsteps, err := st.run(fm)
			if err != nil {
				t.Logf("with every fix on: %v", err)
				return
			}
			inv, _ = fm.InvariantsFor(st.expect)
			if detail := inv[0].Check(fm, fsteps[len(fsteps)-1].State); detail != "" {
				t.Fatalf("with every fix on the story still breaks %s: %s", st.expect, detail)
			}
			t.Logf("with every fix on: the story runs to its end and %s holds", st.expect)
		})
	}
}

type storyLine struct {
	no     int
	fields []string
}

type story struct {
	cfg    Config
	lines  []storyLine
	expect string
}

func parseStory(path string) (*story, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st := &story{cfg: Config{Profile: ProfileDurable, Servers: 3, Values: 1, MaxTerm: 200, MaxLog: 100, MaxDup: 200, MaxMsgs: 1 << 20}}
	sc := bufio.NewScanner(f)
	for no := 1; sc.Scan(); no++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		switch {
		case len(fields) == 0:
		case fields[0] == "config":
			for _, kv := range fields[1:] {
				k, v, _ := strings.Cut(kv, "=")
				n, _ := strconv.Atoi(v)
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
				case "bugs":
					if st.cfg.Bugs, err = ParseBugs(v); err != nil {
						return nil, fmt.Errorf("%s:%d: %w", path, no, err)
					}
				default:
					return nil, fmt.Errorf("%s:%d: unknown config %q", path, no, k)
				}
			}
		case fields[0] == "expect":
			st.expect = fields[1]
		default:
			st.lines = append(st.lines, storyLine{no: no, fields: fields})
		}
	}
	if st.expect == "" {
		return nil, fmt.Errorf("%s: no expect line", path)
	}
	return st, sc.Err()
}

// run takes the story's steps from Init; it fails at the first step that is
// not possible.
func (st *story) run(m *Model) ([]Step, error) {
	s := m.Init()
	steps := []Step{{State: s}}
	for _, ln := range st.lines {
		l, filter, err := st.label(m, s, ln)
		if err != nil {
			return steps, err
		}
		var got []Step
		m.Step(s, l, func(n State, gl Label) {
			if filter == nil || filter(&n) {
				got = append(got, Step{Label: gl, State: &n})
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

// label parses a step into the label it takes and, where the label leaves a
// choice open, a filter on the successor state.
func (st *story) label(m *Model, s *State, ln storyLine) (Label, func(*State) bool, error) {
	f := ln.fields
	fail := func(format string, args ...any) (Label, func(*State) bool, error) {
		return Label{}, nil, fmt.Errorf("line %d %q: %s", ln.no, strings.Join(f, " "), fmt.Sprintf(format, args...))
	}
	a, ok := ParseAction(f[0])
	if !ok || len(f) < 2 {
		return fail("unknown action")
	}
	server := func(name string) ServerID {
		for _, id := range m.servers {
			if name == serverName(id) {
				return id
			}
		}
		return Nil
	}
	l := Label{Action: a, I: server(f[1])}
	if l.I == 0 {
		return fail("bad server %q", f[1])
	}
	switch {
	case a.ReceivesMessage():
		if len(f) < 4 || f[2] != "<-" {
			return fail("want: %s DEST <- SOURCE [TYPE] [field=value ...]", a)
		}
		src := server(f[3])
		var want []string
		mtype := MType(0)
		for _, x := range f[4:] {
			if t, ok := map[string]MType{"RequestVoteRequest": RequestVoteRequest, "RequestVoteResponse": RequestVoteResponse,
				"AppendEntriesRequest": AppendEntriesRequest, "AppendEntriesResponse": AppendEntriesResponse}[x]; ok {
				mtype = t
			} else {
				want = append(want, x)
			}
		}
		if mtype == 0 {
			mtype = map[Action]MType{ActHandleRequestVoteRequest: RequestVoteRequest, ActHandleRequestVoteResponse: RequestVoteResponse,
				ActHandleAppendEntriesRequest: AppendEntriesRequest, ActHandleAppendEntriesResponse: AppendEntriesResponse}[a]
		}
		var found []Message
		for _, e := range s.Messages {
			if e.M.Msource == src && e.M.Mdest == l.I && (mtype == 0 || e.M.Mtype == mtype) && messageHas(m, e.M, want) {
				found = append(found, e.M)
			}
		}
		if len(found) != 1 {
			return fail("%d matching messages in the bag", len(found))
		}
		l.Msg, l.J = found[0], src
	case a == ActRequestVote || a == ActAppendEntries:
		if len(f) != 3 {
			return fail("want: %s I J", a)
		}
		l.J = server(f[2])
	case a == ActClientRequest:
		if len(f) != 3 {
			return fail("want: %s I V", a)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return fail("%v", err)
		}
		l.Value = uint8(n)
	case a == ActCrash || a == ActCorrupt || a == ActPowerLoss:
		if len(f) < 3 {
			return fail("want: %s I CUT [learned=N] [term=N] [verdict=V]", a)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return fail("%v", err)
		}
		l.Cut = uint8(n)
		filter, err := restartFilter(l.I, f[3:])
		if err != nil {
			return fail("%v", err)
		}
		return l, filter, nil
	}
	return l, nil, nil
}

// restartFilter picks, among the outcomes of a restart of i, those with
// the given learnedCommit, currentTerm or verdict.
func restartFilter(i ServerID, kvs []string) (func(*State) bool, error) {
	var preds []func(*State) bool
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		switch {
		case k == "learned" && err == nil:
			preds = append(preds, func(s *State) bool { return int(s.LearnedCommit[i]) == n })
		case k == "term" && err == nil:
			preds = append(preds, func(s *State) bool { return int(s.CurrentTerm[i]) == n })
		case k == "verdict" && (v == "CLEAN" || v == "TRUNCATED"):
			preds = append(preds, func(s *State) bool { return s.Verdict[i].String() == v })
		default:
			return nil, fmt.Errorf("want learned=N, term=N or verdict=CLEAN|TRUNCATED, got %q", kv)
		}
	}
	return func(s *State) bool {
		for _, p := range preds {
			if !p(s) {
				return false
			}
		}
		return true
	}, nil
}

// messageHas checks field=value pairs against the message's trace form.
func messageHas(m *Model, msg Message, want []string) bool {
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
