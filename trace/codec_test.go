package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const sample = `{"v":1,"seq":0,"action":"Init","config":{"profile":"durable","servers":3,"values":1,"crashes":1,"corruptions":1,"source":"spec"}}
{"v":1,"seq":1,"action":"Timeout","node":"s1","state":{"currentTerm":2,"state":"Candidate","votedFor":"Nil","log":[],"commitIndex":0,"durableLen":0,"learnedCommit":0,"verdict":"CLEAN","truncatedAtTerm":0}}
{"v":1,"seq":2,"action":"RequestVote","node":"s1","peer":"s2","state":{"currentTerm":2,"state":"Candidate","votedFor":"Nil","log":[],"commitIndex":0}}
{"v":1,"seq":3,"action":"UpdateTerm","node":"s2","peer":"s1","msg":{"mtype":"RequestVoteRequest","mterm":2,"mlastLogTerm":0,"mlastLogIndex":0,"msource":"s1","mdest":"s2"},"state":{"currentTerm":2,"state":"Follower","votedFor":"Nil","log":[],"commitIndex":0}}
{"v":1,"seq":4,"action":"HandleAppendEntriesRequest","node":"s2","peer":"s1","msg":{"mtype":"AppendEntriesRequest","mterm":2,"mprevLogIndex":0,"mprevLogTerm":0,"mentries":[{"term":2,"value":1}],"mcommitIndex":0,"mleaderCommit":0,"msource":"s1","mdest":"s2"},"branch":"append","state":{"currentTerm":2,"state":"Follower","votedFor":"Nil","log":[{"term":2,"value":1}],"commitIndex":0}}
{"v":1,"seq":5,"action":"Crash","node":"s2","cut":1,"state":{"currentTerm":2,"state":"Follower","votedFor":"Nil","log":[{"term":2,"value":1}],"commitIndex":0}}
`

// sampleV2 is sample in version 2, with named servers and a log change
// per state.
const sampleV2 = `{"v":2,"seq":0,"action":"Init","config":{"profile":"durable","servers":3,"names":["n1","n7","db-3"],"values":1,"crashes":1,"corruptions":1,"source":"spec"}}
{"v":2,"seq":1,"action":"Timeout","node":"n1","state":{"currentTerm":2,"state":"Candidate","votedFor":"Nil","logKeep":0,"commitIndex":0,"durableLen":0,"learnedCommit":0,"verdict":"CLEAN","truncatedAtTerm":0}}
{"v":2,"seq":2,"action":"RequestVote","node":"n1","peer":"n7","state":{"currentTerm":2,"state":"Candidate","votedFor":"Nil","logKeep":0,"commitIndex":0}}
{"v":2,"seq":3,"action":"UpdateTerm","node":"n7","peer":"n1","msg":{"mtype":"RequestVoteRequest","mterm":2,"mlastLogTerm":0,"mlastLogIndex":0,"msource":"n1","mdest":"n7"},"state":{"currentTerm":2,"state":"Follower","votedFor":"Nil","logKeep":0,"commitIndex":0}}
{"v":2,"seq":4,"action":"HandleAppendEntriesRequest","node":"n7","peer":"n1","msg":{"mtype":"AppendEntriesRequest","mterm":2,"mprevLogIndex":0,"mprevLogTerm":0,"mentries":[{"term":2,"value":1}],"mcommitIndex":0,"mleaderCommit":0,"msource":"n1","mdest":"n7"},"branch":"append","state":{"currentTerm":2,"state":"Follower","votedFor":"Nil","logKeep":0,"logAppend":[{"term":2,"values":[1]}],"commitIndex":0}}
{"v":2,"seq":5,"action":"Crash","node":"n7","cut":1,"state":{"currentTerm":2,"state":"Follower","votedFor":"Nil","logKeep":1,"commitIndex":0}}
`

func TestDecodeSample(t *testing.T) {
	for name, text := range map[string]string{"v1": sample, "v2": sampleV2} {
		t.Run(name, func(t *testing.T) {
			events, err := Decode(strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 6 || events[4].Msg.Mentries[0].Term != 2 || *events[4].Msg.MleaderCommit != 0 || *events[5].Cut != 1 {
				t.Fatalf("decoded %+v", events)
			}
			// Writing the events back in their version gives the same lines.
			if got := encode(t, events); got != text {
				t.Fatalf("round trip:\n%s\nwant\n%s", got, text)
			}
		})
	}
}

func encode(t testing.TB, events []Event) string {
	t.Helper()
	var b bytes.Buffer
	w := NewWriterVersion(&b, events[0].V)
	for _, e := range events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestVersionsConvert: the two samples are one trace, up to names.
func TestVersionsConvert(t *testing.T) {
	v1, err := Decode(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Decode(strings.NewReader(sampleV2))
	if err != nil {
		t.Fatal(err)
	}
	back, err := ToVersion1(v2)
	if err != nil {
		t.Fatal(err)
	}
	back[0].Config.Names = nil
	for k := range back {
		if back[k].State != nil && len(back[k].State.Log) == 0 {
			back[k].State.Log = []Entry{}
		}
	}
	if got, want := encode(t, back), sample; got != want {
		t.Fatalf("v2 as v1:\n%s\nwant\n%s", got, want)
	}
	up := ToVersion2(v1)
	up[0].Config.Names = []string{"n1", "n7", "db-3"}
	if _, err := Decode(strings.NewReader(encode(t, up))); err == nil {
		t.Fatal("v1 names are not v2's: want an error for s1 under names n1, n7, db-3")
	}
	up[0].Config.Names = nil
	again, err := Decode(strings.NewReader(encode(t, up)))
	if err != nil {
		t.Fatalf("v1 as v2: %v", err)
	}
	for k := range again {
		if again[k].State == nil {
			continue
		}
		if !reflect.DeepEqual(again[k].State.LogAppend, v2[k].State.LogAppend) || *again[k].State.LogKeep != *v2[k].State.LogKeep {
			t.Errorf("event %d: log change %d %+v, want %d %+v", k, *again[k].State.LogKeep, again[k].State.LogAppend,
				*v2[k].State.LogKeep, v2[k].State.LogAppend)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(sample), "\n")
	init, step := lines[0], lines[1]
	l2 := strings.Split(strings.TrimSpace(sampleV2), "\n")
	init2 := l2[0]
	cases := map[string]string{
		"empty":                 "",
		"no init":               step + "\n",
		"two inits":             init + "\n" + strings.Replace(init, `"seq":0`, `"seq":1`, 1) + "\n",
		"unknown version":       strings.Replace(init, `"v":1`, `"v":3`, 1) + "\n",
		"mixed versions":        init + "\n" + strings.Replace(step, `"v":1`, `"v":2`, 1) + "\n",
		"seq gap":               init + "\n" + strings.Replace(step, `"seq":1`, `"seq":2`, 1) + "\n",
		"unknown action":        init + "\n" + strings.Replace(step, "Timeout", "Explode", 1) + "\n",
		"unknown field":         init + "\n" + strings.Replace(step, `"node"`, `"nodes":1,"node"`, 1) + "\n",
		"bad node":              init + "\n" + strings.Replace(step, `"s1"`, `"x1"`, 1) + "\n",
		"node beyond servers":   init + "\n" + strings.Replace(step, `"s1"`, `"s4"`, 1) + "\n",
		"negative term":         init + "\n" + strings.Replace(step, `"currentTerm":2`, `"currentTerm":-1`, 1) + "\n",
		"huge term v1":          init + "\n" + strings.Replace(step, `"currentTerm":2`, `"currentTerm":99999999`, 1) + "\n",
		"bad state":             init + "\n" + strings.Replace(step, `"Candidate"`, `"King"`, 1) + "\n",
		"bad profile":           strings.Replace(init, "durable", "fast", 1) + "\n",
		"message missing field": init + "\n" + strings.Replace(lines[3], `"mlastLogIndex":0,`, ``, 1) + "\n",
		"message extra field":   init + "\n" + strings.Replace(lines[3], `"mlastLogIndex":0,`, `"mlastLogIndex":0,"msuccess":true,`, 1) + "\n",
		"leaderCommit on vote":  init + "\n" + strings.Replace(lines[3], `"mlastLogIndex":0,`, `"mlastLogIndex":0,"mleaderCommit":1,`, 1) + "\n",
		"trailing garbage":      init + " x\n",
		"delta in v1":           init + "\n" + strings.Replace(step, `"log":[]`, `"logKeep":0`, 1) + "\n",
		"names in v1":           strings.Replace(init, `"servers":3`, `"servers":3,"names":["a","b","c"]`, 1) + "\n",
		// version 2
		"whole log in v2":      init2 + "\n" + strings.Replace(l2[1], `"logKeep":0`, `"log":[]`, 1) + "\n",
		"no logKeep":           init2 + "\n" + strings.Replace(l2[1], `"logKeep":0,`, ``, 1) + "\n",
		"keep beyond the log":  init2 + "\n" + strings.Replace(l2[1], `"logKeep":0`, `"logKeep":1`, 1) + "\n",
		"empty run":            init2 + "\n" + strings.Replace(l2[1], `"logKeep":0`, `"logKeep":0,"logAppend":[{"term":1,"values":[]}]`, 1) + "\n",
		"empty logAppend":      init2 + "\n" + strings.Replace(l2[1], `"logKeep":0`, `"logKeep":0,"logAppend":[]`, 1) + "\n",
		"unmerged runs":        init2 + "\n" + strings.Replace(l2[1], `"logKeep":0`, `"logKeep":0,"logAppend":[{"term":1,"values":[1]},{"term":1,"values":[1]}]`, 1) + "\n",
		"run term 0":           init2 + "\n" + strings.Replace(l2[1], `"logKeep":0`, `"logKeep":0,"logAppend":[{"term":0,"values":[1]}]`, 1) + "\n",
		"term beyond 2^62":     init2 + "\n" + strings.Replace(l2[1], `"currentTerm":2`, `"currentTerm":4611686018427387905`, 1) + "\n",
		"unknown name":         init2 + "\n" + strings.Replace(l2[1], `"node":"n1"`, `"node":"s1"`, 1) + "\n",
		"name twice":           strings.Replace(init2, `"db-3"`, `"n1"`, 1) + "\n",
		"bad name":             strings.Replace(init2, `"db-3"`, `"db 3"`, 1) + "\n",
		"name Nil":             strings.Replace(init2, `"db-3"`, `"Nil"`, 1) + "\n",
		"names and servers":    strings.Replace(init2, `"servers":3`, `"servers":2`, 1) + "\n",
		"torn last line":       init2 + "\n" + l2[1][:len(l2[1])/2],
		"torn line in between": init2 + "\n" + l2[1][:len(l2[1])/2] + "\n" + l2[2] + "\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(strings.NewReader(text)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestTornLastLine: a trace whose writer was killed inside a line is
// reported as torn (clearly, and distinguishably), and ReadOptions.TornTail
// drops that line. A last line that is complete but lacks its newline is
// not torn.
func TestTornLastLine(t *testing.T) {
	text := strings.TrimSuffix(sampleV2, "\n")
	cut := text[:len(text)-10]
	_, err := Decode(strings.NewReader(cut))
	if !errors.Is(err, ErrTornLine) || !strings.Contains(err.Error(), "line 6") {
		t.Fatalf("torn last line: %v, want ErrTornLine on line 6", err)
	}
	rd := NewReader(strings.NewReader(cut), ReadOptions{TornTail: true})
	n := 0
	for {
		_, err := rd.Next()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatal(err)
			}
			break
		}
		n++
	}
	if n != 5 || !rd.Torn() {
		t.Fatalf("TornTail: %d events, torn %v; want 5, true", n, rd.Torn())
	}
	events, err := Decode(strings.NewReader(text))
	if err != nil || len(events) != 6 {
		t.Fatalf("complete last line without a newline: %d events, %v", len(events), err)
	}
	// A bad line in the middle is an error even with TornTail.
	mid := strings.Replace(sampleV2, `"seq":3,`, `"seq":3`, 1)
	if _, err := DecodeOptions(strings.NewReader(mid), ReadOptions{TornTail: true}); err == nil || errors.Is(err, ErrTornLine) {
		t.Fatalf("a broken middle line: %v", err)
	}
}

// FuzzDecode: no input makes the decoder panic, and whatever it accepts it
// can write back in its version and accept again, event for event. The
// corpus is both samples, their lines, and every trace the repository
// keeps that is small enough.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{sample, sampleV2} {
		f.Add([]byte(s))
		for _, line := range strings.Split(s, "\n") {
			f.Add([]byte(line + "\n"))
		}
	}
	for _, glob := range []string{"../tla/traces/*.ndjson", "../tla/traces/*/*.ndjson", "../spec/testdata/counterexamples/*.ndjson"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil && len(b) <= 1<<15 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		text := encode(t, events)
		again, err := Decode(strings.NewReader(text))
		if err != nil {
			t.Fatalf("accepted trace does not survive a round trip: %v", err)
		}
		if encode(t, again) != text {
			t.Fatal("a second round trip changes the trace")
		}
		if events[0].V == 1 {
			return
		}
		// A version 2 trace that fits version 1 converts to a valid
		// version 1 trace, and back to version 2 with the same logs.
		if v1, err := ToVersion1(events); err == nil {
			text1 := encode(t, v1)
			again, err := Decode(strings.NewReader(text1))
			if err != nil {
				t.Fatalf("as version 1: %v", err)
			}
			back, err := ToVersion1(ToVersion2(again))
			if err != nil || encode(t, back) != text1 {
				t.Fatalf("version 1 to 2 and back changes the logs: %v", err)
			}
		}
	})
}
