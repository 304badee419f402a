package spec

import (
	"errors"
	"fmt"

	"github.com/durableraft/durableraft/trace"
)

// The trace checker's representation (docs/explorer.md, "State and
// encoding"): 64-bit terms and indexes, logs as [RunLog], and no history
// variables, which no action reads and the checker does not judge.

// TraceState is the trace checker's state.
type TraceState = StateOf[uint64, RunLog, NoVoters]

type (
	traceMessage = MessageOf[uint64, RunLog]
	traceLabel   = LabelOf[uint64, RunLog]
)

// traceMachine is the trace checker's machine: the actions of Machine,
// and the trace checker's state comparisons.
type traceMachine struct {
	Machine[uint64, RunLog, NoVoters]
}

// NoVoters is the trace checker's voterLog[i]: nothing, since it keeps no
// history.
type NoVoters struct{}

// With is voterLog[i] @@ (j :> log), which the trace checker does not keep.
func (NoVoters) With(ServerID, RunLog) NoVoters { return NoVoters{} }

// Compare orders voter logs; there is only one.
func (NoVoters) Compare(NoVoters) int { return 0 }

// maxTraceValues bounds a trace's values: an entry's value is a byte.
const maxTraceValues = 255

// newTraceMachine builds the machine a trace's Init config describes:
// without bounds (a trace is checked against the protocol, not the
// explorer's search limits) and without history.
func newTraceMachine(c *trace.Config) (*traceMachine, error) {
	p, err := ParseProfile(c.Profile)
	if err != nil {
		return nil, err
	}
	switch {
	case c.Servers < 1 || c.Servers > MaxServers:
		return nil, fmt.Errorf("servers=%d: the spec has 1..%d servers", c.Servers, MaxServers)
	case c.Values < 1 || c.Values > maxTraceValues:
		return nil, fmt.Errorf("values=%d: want 1..%d", c.Values, maxTraceValues)
	case c.Crashes < 0 || c.Crashes > trace.MaxIndex || c.Corruptions < 0 || c.Corruptions > trace.MaxIndex:
		return nil, fmt.Errorf("crashes=%d corruptions=%d out of range", c.Crashes, c.Corruptions)
	case c.BadCommits < 0 || c.BadCommits > trace.MaxIndex || (c.BadCommits > 0 && !c.Production):
		return nil, fmt.Errorf("badCommits=%d: out of range, or without the production actions", c.BadCommits)
	case p == ProfileRaft && (c.Crashes != 0 || c.Corruptions != 0 || c.Production):
		return nil, errors.New("profile raft has no crash or corruption budgets or production actions")
	}
	cfg := Config{Profile: p, Servers: c.Servers, Values: c.Values}
	if p == ProfileDurable {
		cfg.Crashes, cfg.Corruptions, cfg.Production = c.Crashes, c.Corruptions, c.Production
		cfg.BadCommits = c.BadCommits
		cfg.PowerLosses = c.PowerLosses
		cfg.MarkedVotes = c.MarkedVotes
	}
	if c.MarkedVotes && p != ProfileDurable {
		return nil, errors.New("markedVotes: profile durable only")
	}
	if c.PowerLosses < 0 || c.PowerLosses > trace.MaxIndex || (c.PowerLosses > 0 && (p != ProfileDurable || c.Membership)) {
		return nil, fmt.Errorf("powerLosses=%d: out of range, or not profile durable without membership", c.PowerLosses)
	}
	if cfg.Bugs, err = ParseBugs(c.Bugs); err != nil {
		return nil, err
	}
	if p == ProfileRaft && cfg.Bugs&^protocolBugs != 0 {
		return nil, fmt.Errorf("profile raft: bugs=%v: only raft.tla's own rules and membership's (%v) can be switched off", cfg.Bugs, protocolBugs)
	}
	cfg.Membership, cfg.InitVoters = c.Membership, c.InitVoters
	if err := cfg.validateMembership(); err != nil {
		return nil, err
	}
	cfg.Repair = c.Repair && p == ProfileDurable
	if c.Repair && p != ProfileDurable {
		return nil, errors.New("repair: profile durable only")
	}
	if err := cfg.validateRepair(); err != nil {
		return nil, err
	}
	return &traceMachine{Machine: newMachine[uint64, RunLog, NoVoters](cfg, false)}, nil
}

// traceKey is a cheap hash of a trace state's protocol variables, for
// bucketing states before traceStatesEqual compares them.
func (m *traceMachine) traceKey(s *TraceState) uint64 {
	h := uint64(len(s.Messages))
	mix := func(x uint64) { h = (h ^ x) * 0x100000001B3 }
	for _, i := range m.servers {
		mix(s.CurrentTerm[i])
		mix(uint64(s.State[i])<<8 | uint64(s.VotedFor[i]))
		mix(s.Log[i].summary())
		mix(s.CommitIndex[i])
		mix(s.DurableLen[i])
		mix(s.LearnedCommit[i])
		mix(uint64(s.VotesGranted[i])<<8 | uint64(s.VotesResponded[i]))
		mix(s.Persisted[i].CurrentTerm<<8 | uint64(s.Persisted[i].VotedFor) | uint64(len(s.Held[i]))<<40)
	}
	return h ^ s.CrashesLeft<<32 ^ s.CorruptionsLeft ^ s.BadCommitsLeft<<48
}

// traceStatesEqual reports whether two trace states have equal protocol
// variables (they have no history variables): then they have the same
// futures, and the checker keeps one.
func (m *traceMachine) traceStatesEqual(a, b *TraceState) bool {
	if a.CrashesLeft != b.CrashesLeft || a.CorruptionsLeft != b.CorruptionsLeft || a.BadCommitsLeft != b.BadCommitsLeft || !bagsEqual(a.Messages, b.Messages) {
		return false
	}
	if a.PowerLossesLeft != b.PowerLossesLeft || a.Damaged != b.Damaged || a.BatchStart != b.BatchStart || a.VotesAmbiguous != b.VotesAmbiguous {
		return false
	}
	for _, i := range m.servers {
		if a.Persisted[i] != b.Persisted[i] || a.StaleDurable[i] != b.StaleDurable[i] || !bagsEqual(a.Held[i], b.Held[i]) {
			return false
		}
		switch {
		case a.CurrentTerm[i] != b.CurrentTerm[i], a.State[i] != b.State[i], a.VotedFor[i] != b.VotedFor[i],
			a.CommitIndex[i] != b.CommitIndex[i], a.VotesResponded[i] != b.VotesResponded[i],
			a.VotesGranted[i] != b.VotesGranted[i], a.DurableLen[i] != b.DurableLen[i],
			a.LearnedCommit[i] != b.LearnedCommit[i], a.Verdict[i] != b.Verdict[i],
			a.TruncatedAtTerm[i] != b.TruncatedAtTerm[i], a.RepairFrom[i] != b.RepairFrom[i],
			!a.Log[i].Equal(b.Log[i]), !a.StaleLog[i].Equal(b.StaleLog[i]):
			return false
		}
		for _, j := range m.servers {
			if a.NextIndex[i][j] != b.NextIndex[i][j] || a.MatchIndex[i][j] != b.MatchIndex[i][j] {
				return false
			}
		}
	}
	return true
}

func bagsEqual(a, b []BagEntryOf[uint64, RunLog]) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k].N != b[k].N || compareMessage(&a[k].M, &b[k].M) != 0 {
			return false
		}
	}
	return true
}
