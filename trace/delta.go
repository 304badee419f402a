package trace

import (
	"errors"
	"fmt"
	"slices"
)

// Helpers for version 2's log changes: emitters that keep whole logs
// (spec/) compute the change with Delta; readers and converters apply it
// with Apply. impl/raft's tracer tracks the change as it happens instead.

// Runs is the run-length form of entries: one Run per maximal stretch of
// one term. It is nil for no entries.
func Runs(entries []Entry) []Run {
	var out []Run
	for _, e := range entries {
		if n := len(out); n > 0 && out[n-1].Term == e.Term {
			out[n-1].Values = append(out[n-1].Values, e.Value)
			continue
		}
		out = append(out, Run{Term: e.Term, Values: []int{e.Value}})
	}
	return out
}

// AppendRuns appends the entries of runs to dst.
func AppendRuns(dst []Entry, runs []Run) []Entry {
	for _, r := range runs {
		for _, v := range r.Values {
			dst = append(dst, Entry{Term: r.Term, Value: v})
		}
	}
	return dst
}

// Delta is the change from log prev to log cur: keep the longest common
// prefix, append the rest.
func Delta(prev, cur []Entry) (keep int, appended []Run) {
	for keep < len(prev) && keep < len(cur) && prev[keep] == cur[keep] {
		keep++
	}
	return keep, Runs(cur[keep:])
}

// Apply is the log a version 2 state describes, given the node's
// previous log (which it does not change).
func Apply(prev []Entry, s *NodeState) ([]Entry, error) {
	if s.LogKeep == nil {
		return nil, errors.New("trace: no logKeep")
	}
	keep := *s.LogKeep
	if keep < 0 || keep > len(prev) {
		return nil, fmt.Errorf("trace: logKeep %d of a log of %d entries", keep, len(prev))
	}
	return AppendRuns(slices.Clone(prev[:keep]), s.LogAppend), nil
}

// ToVersion1 rewrites a version 2 trace in version 1's form (whole logs,
// servers s1..sN), for readers of version 1 only. A version 1 trace is
// returned as it is. Names other than s1..sN are renamed by position. It
// fails when the trace does not fit version 1's limits (at most 9 servers,
// numbers up to 2^16, logs of up to 4,096 entries): what it returns is a
// valid version 1 trace.
func ToVersion1(events []Event) ([]Event, error) {
	if len(events) == 0 || events[0].V == 1 {
		return events, nil
	}
	c := events[0].Config
	if c == nil {
		return nil, errors.New("trace: no config on line 0")
	}
	rename := map[string]string{"Nil": "Nil"}
	for k, n := range c.ServerNames() {
		rename[n] = DefaultNames(c.Servers)[k]
	}
	logs := map[string][]Entry{}
	out := make([]Event, len(events))
	for k, e := range events {
		e.V = 1
		if k == 0 {
			cc := *c
			cc.Names = nil
			e.Config = &cc
			out[k] = e
			continue
		}
		e.Node, e.Peer = rename[e.Node], rename[e.Peer]
		if e.Msg != nil {
			m := *e.Msg
			m.Msource, m.Mdest = rename[m.Msource], rename[m.Mdest]
			e.Msg = &m
		}
		if e.State != nil {
			s := *e.State
			log, err := Apply(logs[e.Node], &s)
			if err != nil {
				return nil, fmt.Errorf("trace: event %d: %w", e.Seq, err)
			}
			logs[e.Node] = log
			s.Log, s.LogKeep, s.LogAppend = slices.Clone(log), nil, nil
			if s.Log == nil {
				s.Log = []Entry{}
			}
			renameState(&s, rename)
			e.State = &s
		}
		out[k] = e
	}
	rd := &Reader{}
	for k := range out {
		if err := rd.validate(&out[k]); err != nil {
			return nil, fmt.Errorf("trace: event %d does not fit version 1: %w", k, err)
		}
		rd.seq++
	}
	return out, nil
}

func renameState(s *NodeState, rename map[string]string) {
	s.VotedFor = rename[s.VotedFor]
	for _, set := range []**[]string{&s.VotesResponded, &s.VotesGranted} {
		if *set == nil {
			continue
		}
		names := make([]string, len(**set))
		for k, n := range **set {
			names[k] = rename[n]
		}
		slices.Sort(names)
		*set = &names
	}
	for _, idx := range []*map[string]int{&s.NextIndex, &s.MatchIndex} {
		if *idx == nil {
			continue
		}
		m := map[string]int{}
		for n, v := range *idx {
			m[rename[n]] = v
		}
		*idx = m
	}
}

// ToVersion2 rewrites a version 1 trace in version 2's form (log changes).
// A version 2 trace is returned as it is.
func ToVersion2(events []Event) []Event {
	if len(events) == 0 || events[0].V == Version {
		return events
	}
	logs := map[string][]Entry{}
	out := make([]Event, len(events))
	for k, e := range events {
		e.V = Version
		if e.State != nil {
			s := *e.State
			keep, app := Delta(logs[e.Node], s.Log)
			logs[e.Node] = s.Log
			s.Log, s.LogKeep, s.LogAppend = nil, &keep, app
			e.State = &s
		}
		out[k] = e
	}
	return out
}
