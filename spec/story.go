package spec

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stories are failure stories written step by step (testdata/stories),
// for behaviours too deep for random walks to find and short enough to
// read. TestStories runs each under go test and raftspec story runs one
// from the command line, both through this reader. Syntax, one step per
// line ('#' starts a comment):
//
//	config servers=3 values=1 crashes=0 corruptions=1 production=0 powerlosses=0 bugs=truncated-member-votes
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
//	expect NoAckedLoss              # the invariant the last state breaks

// Outcome is what a story does with every fix on (Story.Fixed).
type Outcome string

const (
	FixedBlocked Outcome = "blocked" // some step is no longer possible
	FixedHolds   Outcome = "holds"   // it runs to its end and the invariant holds
	FixedBroken  Outcome = "broken"  // it still breaks the invariant: the fix does not fix it
)

// Fixed replays the story with every bug switch off. detail says which
// step was impossible (blocked) or what is still broken.
func (st *Story) Fixed() (Outcome, string, error) {
	c := st.Config
	c.Bugs = 0
	fm, err := NewModel(c)
	if err != nil {
		return "", "", err
	}
	steps, err := st.Run(fm)
	if err != nil {
		return FixedBlocked, err.Error(), nil
	}
	d, err := st.Broken(fm, steps)
	switch {
	case err != nil:
		return "", "", err
	case d != "":
		return FixedBroken, d, nil
	}
	return FixedHolds, "", nil
}

// Broken is what the invariant the story expects says of the last of
// steps ("" when it holds); an error when m has no such invariant.
func (st *Story) Broken(m *Model, steps []Step) (string, error) {
	inv, err := m.InvariantsFor(st.Expect)
	if err != nil {
		return "", err
	}
	return inv[0].Check(m, steps[len(steps)-1].State), nil
}

type storyLine struct {
	no     int
	fields []string
}

// Story is a failure story of testdata/stories (the format TestStories
// and raftspec story read): a config line, one step per line, an expect
// line naming the invariant the steps break under the story's switches.
type Story struct {
	Config Config // the story's bounds and bug switches
	Expect string // the invariant its last state breaks
	lines  []storyLine
}

// ParseStory reads a story file.
func ParseStory(path string) (*Story, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st := &Story{Config: Config{Profile: ProfileDurable, Servers: 3, Values: 1, MaxTerm: 200, MaxLog: 100, MaxDup: 200, MaxMsgs: 1 << 20}}
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
			st.Expect = fields[1]
		default:
			st.lines = append(st.lines, storyLine{no: no, fields: fields})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if st.Expect == "" {
		return nil, fmt.Errorf("%s: no expect line", path)
	}
	return st, nil
}

func (st *Story) config(kvs []string) error {
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		if k == "bugs" {
			b, err := ParseBugs(v)
			if err != nil {
				return err
			}
			st.Config.Bugs = b
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("config %s: %w", kv, err)
		}
		switch k {
		case "servers":
			st.Config.Servers = n
		case "values":
			st.Config.Values = n
		case "crashes":
			st.Config.Crashes = n
		case "corruptions":
			st.Config.Corruptions = n
		case "production":
			st.Config.Production = n != 0
		case "powerlosses":
			st.Config.PowerLosses = n
		case "wipes":
			st.Config.Wipes = n
		case "markedvotes":
			st.Config.MarkedVotes = n != 0
		default:
			return fmt.Errorf("unknown config %q", k)
		}
	}
	return nil
}

// Run takes the story's steps from m's Init; it fails at the first step
// that is not possible (zero or several successors), returning the steps
// taken so far.
func (st *Story) Run(m *Model) ([]Step, error) {
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
				kept := n
				got = append(got, Step{Label: gl, State: &kept})
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

var storyTypes = map[string]MType{"RequestVoteRequest": RequestVoteRequest, "RequestVoteResponse": RequestVoteResponse,
	"AppendEntriesRequest": AppendEntriesRequest, "AppendEntriesResponse": AppendEntriesResponse}

var handlerTypes = map[Action]MType{ActHandleRequestVoteRequest: RequestVoteRequest,
	ActHandleRequestVoteResponse: RequestVoteResponse, ActHandleAppendEntriesRequest: AppendEntriesRequest,
	ActHandleAppendEntriesResponse: AppendEntriesResponse}

// label parses a step into the label it takes and, where the label leaves
// a choice open, a filter on the successor.
func (st *Story) label(m *Model, s *State, ln storyLine) (Label, func(*State) bool, error) {
	f := ln.fields
	fail := func(format string, args ...any) (Label, func(*State) bool, error) {
		return Label{}, nil, fmt.Errorf("line %d %q: %s", ln.no, strings.Join(f, " "), fmt.Sprintf(format, args...))
	}
	a, ok := ParseAction(f[0])
	if !ok || len(f) < 2 {
		return fail("unknown action")
	}
	server := func(name string) ServerID {
		for _, id := range m.Servers() {
			if name == id.String() {
				return id
			}
		}
		return Nil
	}
	l := Label{Action: a, I: server(f[1])}
	if l.I == Nil {
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
	case a == ActRequestVote || a == ActAppendEntries || a == ActAnswerFirstBoot:
		if len(f) != 3 {
			return fail("want: %s I J", a)
		}
		l.J = server(f[2])
	case a == ActClientRequest || a == ActCrash || a == ActCorrupt || a == ActPowerLoss:
		if len(f) != 3 && !(len(f) > 3 && a != ActClientRequest) {
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
// given learnedCommit, currentTerm or verdict .
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
		case k == "verdict" && (v == "CLEAN" || v == "TRUNCATED" || v == "AMBIGUOUS"):
			preds = append(preds, func(s *State) bool { return s.Verdict[i].String() == v })
		default:
			return nil, fmt.Errorf("want learned=N, term=N or verdict=CLEAN|TRUNCATED|AMBIGUOUS, got %q", kv)
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
