package trace

import (
	"bytes"
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

func TestDecodeSample(t *testing.T) {
	events, err := Decode(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 6 || events[4].Msg.Mentries[0].Term != 2 || *events[4].Msg.MleaderCommit != 0 || *events[5].Cut != 1 {
		t.Fatalf("decoded %+v", events)
	}
	// Writing the events back gives the same lines.
	var b bytes.Buffer
	w := NewWriter(&b)
	for _, e := range events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	again, err := Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(events) {
		t.Fatalf("round trip: %d events, want %d", len(again), len(events))
	}
}

func TestDecodeRejects(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(sample), "\n")
	init, step := lines[0], lines[1]
	cases := map[string]string{
		"empty":                 "",
		"no init":               step,
		"two inits":             init + "\n" + strings.Replace(init, `"seq":0`, `"seq":1`, 1),
		"wrong version":         strings.Replace(init, `"v":1`, `"v":2`, 1),
		"seq gap":               init + "\n" + strings.Replace(step, `"seq":1`, `"seq":2`, 1),
		"unknown action":        init + "\n" + strings.Replace(step, "Timeout", "Explode", 1),
		"unknown field":         init + "\n" + strings.Replace(step, `"node"`, `"nodes":1,"node"`, 1),
		"bad node":              init + "\n" + strings.Replace(step, `"s1"`, `"x1"`, 1),
		"negative term":         init + "\n" + strings.Replace(step, `"currentTerm":2`, `"currentTerm":-1`, 1),
		"huge term":             init + "\n" + strings.Replace(step, `"currentTerm":2`, `"currentTerm":99999999`, 1),
		"bad state":             init + "\n" + strings.Replace(step, `"Candidate"`, `"King"`, 1),
		"bad profile":           strings.Replace(init, "durable", "fast", 1),
		"message missing field": init + "\n" + strings.Replace(lines[3], `"mlastLogIndex":0,`, ``, 1),
		"message extra field":   init + "\n" + strings.Replace(lines[3], `"mlastLogIndex":0,`, `"mlastLogIndex":0,"msuccess":true,`, 1),
		"leaderCommit on vote":  init + "\n" + strings.Replace(lines[3], `"mlastLogIndex":0,`, `"mlastLogIndex":0,"mleaderCommit":1,`, 1),
		"trailing garbage":      init + " x",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(strings.NewReader(text)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// FuzzDecode: no input makes the decoder panic, and whatever it accepts it
// can write back and accept again.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(sample))
	for _, line := range strings.Split(sample, "\n") {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		var b bytes.Buffer
		w := NewWriter(&b)
		for _, e := range events {
			if err := w.Write(e); err != nil {
				t.Fatalf("accepted event cannot be written: %v", err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(&b); err != nil {
			t.Fatalf("accepted trace does not survive a round trip: %v", err)
		}
	})
}
