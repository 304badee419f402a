package spec

import (
	"testing"
)

// TestConfigValueRoundTrip: every configuration of up to MaxServers
// servers (voters and learners disjoint) is one value in 13..255 and
// decodes back to itself, and no client value is a configuration.
func TestConfigValueRoundTrip(t *testing.T) {
	seen := map[uint8]MemberConfig{}
	for voters := ServerSet(0); voters < 1<<MaxServers; voters++ {
		for learners := ServerSet(0); learners < 1<<MaxServers; learners++ {
			if voters&learners != 0 {
				continue
			}
			c := MemberConfig{Voters: voters, Learners: learners}
			v := c.Value()
			if !IsConfigValue(v) || DecodeConfig(v) != c {
				t.Fatalf("%v: value %d decodes to %v", c, v, DecodeConfig(v))
			}
			if other, dup := seen[v]; dup {
				t.Fatalf("%v and %v share value %d", c, other, v)
			}
			seen[v] = c
		}
	}
	if len(seen) != 243 {
		t.Fatalf("%d configurations, want 3^5", len(seen))
	}
	for v := uint8(1); v < ConfigValueBase; v++ {
		if IsConfigValue(v) {
			t.Fatalf("client value %d is a configuration", v)
		}
	}
}

// leaderState is a state of a 4-server membership model where s1 leads
// term 3 with log, commit index commit, and every other server follows.
func leaderState(m *Model, log Log, commit uint8) *State {
	s := m.Init()
	for _, i := range m.servers {
		s.CurrentTerm[i] = 3
	}
	s.State[1] = Leader
	s.Log[1] = log
	s.DurableLen[1] = uint8(log.Len())
	s.CommitIndex[1] = commit
	return s
}

// TestChangeConfigRules: ChangeConfig's guards, each with the switch that
// removes it, and the single-server changes it offers.
func TestChangeConfigRules(t *testing.T) {
	all := MemberConfig{Voters: 0b1111}
	without4 := MemberConfig{Voters: 0b0111}
	for _, tc := range []struct {
		name   string
		bugs   Bug
		log    Log
		commit uint8
		want   int // successors
	}{
		// Four voters: four removals, no non-member to add.
		{"own-term entry committed", 0, LogOf(Entry{3, 1}), 1, 4},
		{"nothing committed", 0, LogOf(Entry{3, 1}), 0, 0},
		{"nothing committed, bug", BugConfigBeforeOwnTermCommit, LogOf(Entry{3, 1}), 0, 4},
		{"committed entry of an earlier term", 0, LogOf(Entry{2, 1}), 1, 0},
		{"committed entry of an earlier term, bug", BugConfigBeforeOwnTermCommit, LogOf(Entry{2, 1}), 1, 4},
		// Three voters and s4 out: three removals and s4 as learner.
		{"previous change committed", 0, LogOf(Entry{3, 1}, Entry{3, without4.Value()}), 2, 4},
		{"previous change uncommitted", 0, LogOf(Entry{3, 1}, Entry{3, without4.Value()}), 1, 0},
		{"previous change uncommitted, bug", BugConfigWhileUncommitted, LogOf(Entry{3, 1}, Entry{3, without4.Value()}), 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewModel(Config{Profile: ProfileRaft, Servers: 4, Values: 1, MaxTerm: 4, MaxLog: 3, MaxDup: 1, MaxMsgs: 1,
				Membership: true, Bugs: tc.bugs})
			if err != nil {
				t.Fatal(err)
			}
			s := leaderState(m, tc.log, tc.commit)
			from := ConfigOf(&m.Machine, s.Log[1])
			n := 0
			m.ChangeConfig(s, 1, func(succ State, l Label) {
				n++
				to := ConfigOf(&m.Machine, succ.Log[1])
				changed := (from.Voters ^ to.Voters) | (from.Learners ^ to.Learners)
				if changed.Len() != 1 || !changed.Has(l.J) || to.Value() != l.Value {
					t.Errorf("%v: %v -> %v changes %v", l, from, to, changed.Members())
				}
				if succ.Log[1].Len() != s.Log[1].Len()+1 || succ.Log[1].Term(succ.Log[1].Len()) != 3 {
					t.Errorf("%v: log %v", l, succ.Log[1])
				}
			})
			if n != tc.want {
				t.Errorf("%d successors, want %d", n, tc.want)
			}
		})
	}
	if all.Value() == without4.Value() {
		t.Fatal("two configurations, one value")
	}
}

// TestConfigEffectiveOnAppend: a server counts quorums, stands for
// election and replicates by the latest configuration of its log,
// committed or not, and a truncation takes the configuration with it.
func TestConfigEffectiveOnAppend(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileRaft, Servers: 4, Values: 1, MaxTerm: 4, MaxLog: 3, MaxDup: 1, MaxMsgs: 1, Membership: true})
	if err != nil {
		t.Fatal(err)
	}
	c := MemberConfig{Voters: 0b0011, Learners: 0b0100} // voters s1, s2; learner s3; s4 out
	s := leaderState(m, LogOf(Entry{3, 1}, Entry{3, c.Value()}), 1)
	if !m.quorumIn(s.Log[1], 0b0011) || m.quorumIn(s.Log[1], 0b1101) {
		t.Error("quorum not counted in the uncommitted configuration")
	}
	var sentTo ServerSet
	for _, j := range m.servers {
		m.AppendEntries(s, 1, j, func(State, Label) { sentTo = sentTo.With(j) })
	}
	if sentTo != 0b0110 {
		t.Errorf("leader replicates to %v, want the other members s2, s3", sentTo.Members())
	}
	s.Log[3] = s.Log[1]
	s.State[3] = Follower
	stood := false
	m.Timeout(s, 3, func(State, Label) { stood = true })
	if stood {
		t.Error("a learner stood for election")
	}
	if got := ConfigOf(&m.Machine, s.Log[3].Prefix(1)); got != m.InitConfig() {
		t.Errorf("a truncated log keeps configuration %v", got)
	}
}

// TestSnapshotCarriesConfig: an installed snapshot is a prefix of the
// leader's log, configuration entries included, so the follower uses the
// snapshot's configuration (the production actions with membership).
func TestSnapshotCarriesConfig(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileDurable, Production: true, Membership: true, Servers: 4, Values: 1,
		MaxTerm: 4, MaxLog: 3, MaxDup: 1, MaxMsgs: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := MemberConfig{Voters: 0b0111, Learners: 0b1000}
	s := leaderState(m, LogOf(Entry{3, 1}, Entry{3, c.Value()}), 2)
	installed := false
	m.SendSnapshot(s, 1, 4, func(sent State, l Label) {
		if l.Msg.Mentries.Len() != 2 {
			return
		}
		m.InstallSnapshot(&sent, 4, 1, l.Msg, func(n State, _ Label) {
			installed = true
			if got := ConfigOf(&m.Machine, n.Log[4]); got != c {
				t.Errorf("after the install s4 uses %v, want %v", got, c)
			}
		})
	})
	if !installed {
		t.Fatal("no install of the snapshot of index 2")
	}
}

// TestMembershipHolds: with every rule on, the explorer finds no violation
// with membership, in both profiles, at small bounds (the documented ones
// are in docs/membership.md), and symmetry still counts classes.
func TestMembershipHolds(t *testing.T) {
	for _, cfg := range []Config{
		{Profile: ProfileRaft, Servers: 3, Values: 1, MaxTerm: 2, MaxLog: 2, MaxDup: 1, MaxMsgs: 1, Membership: true, InitVoters: 2},
		{Profile: ProfileDurable, Servers: 2, Values: 1, MaxTerm: 3, MaxLog: 2, MaxDup: 1, MaxMsgs: 1, Crashes: 1, Membership: true},
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			m, err := NewModel(cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Explore(m, Options{Workers: 2, Without: mustActions(t, "DropMessage,DuplicateMessage")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation != nil {
				t.Fatalf("%s violated: %s", res.Violation.Invariant, res.Violation.Detail)
			}
			t.Logf("%d distinct states", res.Distinct)
		})
	}
}

func mustActions(t *testing.T, list string) ActionSet {
	t.Helper()
	s, err := ParseActions(list)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
