package spec

import (
	"fmt"
	"strings"
)

// Membership change (docs/membership.md): single-server changes, Ongaro's
// thesis §4.1, with the configuration in the log.
//
//   - A configuration names, for each server, whether it is a voter, a
//     learner (a non-voting member: it receives the log, does not stand
//     for election and does not count in a quorum) or not a member.
//   - It is a log entry: a configuration entry's value is ConfigValueBase
//     plus the configuration's code (below), so that logs, messages, the
//     trace format and TLA+ carry it as they carry any value. A client's
//     values are 1..ConfigValueBase-1.
//   - It takes effect on append: server i uses ConfigOf(log[i]), the latest
//     configuration entry of its log, committed or not (the initial
//     configuration when there is none). A truncated suffix takes its
//     configuration entries with it, an installed snapshot brings its own.
//   - A leader appends a change of one server at a time (ChangeConfig),
//     only once the previous change is committed, and only once it has
//     committed an entry of its own term (the fix of the single-server bug
//     Ongaro reported in 2015).
//
// With Config.Membership off none of this is in force: no value is a
// configuration, every server is a voter, ChangeConfig is never enabled,
// and the state graph is raft.tla's (or the durable profile's) unchanged.

// ConfigValueBase is the value of the configuration entry of code 0. A
// code is Σ d(k)·3^(k-1) over the servers k = 1..MaxServers, where d(k) is
// 0 (not a member), 1 (learner) or 2 (voter): 3^5 = 243 codes, values
// 13..255.
const ConfigValueBase = 13

// MemberConfig is a configuration: its voters and its learners (disjoint).
type MemberConfig struct {
	Voters, Learners ServerSet
}

// Members is Voters \cup Learners.
func (c MemberConfig) Members() ServerSet { return c.Voters | c.Learners }

// Value is the entry value that carries c.
func (c MemberConfig) Value() uint8 {
	code, p := 0, 1
	for id := ServerID(1); id <= MaxServers; id++ {
		switch {
		case c.Voters.Has(id):
			code += 2 * p
		case c.Learners.Has(id):
			code += p
		}
		p *= 3
	}
	return uint8(ConfigValueBase + code)
}

// IsConfigValue reports whether an entry value is a configuration.
func IsConfigValue(v uint8) bool { return v >= ConfigValueBase }

// DecodeConfig is the configuration an entry value carries (the caller
// checks IsConfigValue).
func DecodeConfig(v uint8) MemberConfig {
	var c MemberConfig
	code := int(v) - ConfigValueBase
	for id := ServerID(1); id <= MaxServers; id++ {
		switch code % 3 {
		case 1:
			c.Learners = c.Learners.With(id)
		case 2:
			c.Voters = c.Voters.With(id)
		}
		code /= 3
	}
	return c
}

func (c MemberConfig) String() string {
	var b strings.Builder
	b.WriteString("{voters ")
	for k, id := range c.Voters.Members() {
		if k > 0 {
			b.WriteString(",")
		}
		b.WriteString(id.String())
	}
	if c.Learners != 0 {
		b.WriteString(" learners ")
		for k, id := range c.Learners.Members() {
			if k > 0 {
				b.WriteString(",")
			}
			b.WriteString(id.String())
		}
	}
	b.WriteString("}")
	return b.String()
}

// InitConfig is the configuration of an empty log: servers 1..InitVoters
// are voters (all of them when InitVoters is 0), the others not members.
func (c *Config) InitConfig() MemberConfig {
	n := c.InitVoters
	if n == 0 || n > c.Servers {
		n = c.Servers
	}
	return MemberConfig{Voters: ServerSet(1<<n - 1)}
}

// ConfigOf is the configuration a server with log l uses: its latest
// configuration entry, committed or not, else the initial configuration.
// Without membership every server is a voter.
//
//	ConfigOf(l) == IF \E k \in 1..Len(l) : IsConfig(l[k])
//	               THEN DecodeConfig(l[Max({k \in 1..Len(l) : IsConfig(l[k])})].value)
//	               ELSE InitConfig
func ConfigOf[T Int, L Seq[T, L], V Voters[L, V]](m *Machine[T, L, V], l L) MemberConfig {
	if m.Membership {
		if k := lastConfigIndex(l); k > 0 {
			return DecodeConfig(l.At(k).Value)
		}
	}
	return m.InitConfig()
}

// lastConfigIndex is the index of the latest configuration entry of l, or 0.
func lastConfigIndex[T Int, L Seq[T, L]](l L) int {
	for k := l.Len(); k >= 1; k-- {
		if IsConfigValue(l.At(k).Value) {
			return k
		}
	}
	return 0
}

// quorumOf reports set \in Quorum(c): the voters of set are a majority of
// c's voters (half, with BugQuorumHalf).
func (m *Machine[T, L, V]) quorumOf(c MemberConfig, set ServerSet) bool {
	n := c.Voters.Len()
	if m.Has(BugQuorumHalf) {
		n--
	}
	return (set&c.Voters).Len()*2 > n
}

// quorumIn is the quorum a server with log l counts: raft.tla's Quorum
// without membership, Quorum(ConfigOf(l)) with it.
func (m *Machine[T, L, V]) quorumIn(l L, set ServerSet) bool {
	if !m.Membership {
		return m.Quorum(set)
	}
	return m.quorumOf(ConfigOf(m, l), set)
}

// isVoter reports whether server i, by its own log, is a voter: always
// without membership.
func (m *Machine[T, L, V]) isVoter(s *StateOf[T, L, V], i ServerID) bool {
	return !m.Membership || ConfigOf(m, s.Log[i]).Voters.Has(i)
}

// isMember reports whether leader i replicates to j: j is a voter or a
// learner of i's configuration (any server without membership).
func (m *Machine[T, L, V]) isMember(s *StateOf[T, L, V], i, j ServerID) bool {
	return !m.Membership || ConfigOf(m, s.Log[i]).Members().Has(j)
}

// nextConfigs lists the configurations one single-server change away from
// c: a non-member becomes a learner, a learner a voter or nothing, a voter
// nothing (some voter must remain). j is the server changed.
func nextConfigs(c MemberConfig, servers []ServerID, emit func(next MemberConfig, j ServerID)) {
	for _, j := range servers {
		switch {
		case c.Voters.Has(j):
			if c.Voters.Len() > 1 {
				emit(MemberConfig{Voters: c.Voters &^ (1 << (j - 1)), Learners: c.Learners}, j)
			}
		case c.Learners.Has(j):
			emit(MemberConfig{Voters: c.Voters.With(j), Learners: c.Learners &^ (1 << (j - 1))}, j)
			emit(MemberConfig{Voters: c.Voters, Learners: c.Learners &^ (1 << (j - 1))}, j)
		default:
			emit(MemberConfig{Voters: c.Voters, Learners: c.Learners.With(j)}, j)
		}
	}
}

// ChangeConfig is leader i's single-server configuration change: it
// appends a configuration entry that differs from its own configuration in
// server j only. The change is effective at once (i counts its quorums in
// the new configuration from this step on).
//
//	ChangeConfig(i, j, c) ==
//	    /\ state[i] = Leader
//	    /\ c \in NextConfigs(ConfigOf(log[i])), changing j
//	    /\ LastConfigIndex(log[i]) <= commitIndex[i]           \* one at a time
//	    /\ commitIndex[i] > 0 /\ log[i][commitIndex[i]].term = currentTerm[i]
//	                                                          \* the 2015 fix
//	    /\ log' = [log EXCEPT ![i] = Append(log[i], [term |-> currentTerm[i], value |-> ConfigValue(c)])]
//	    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, commitIndex>>
//
// The second conjunct: a leader's commit index covers entries of its own
// term only from the one at commitIndex[i] on (terms never decrease along a
// log), so it has committed an entry of its term exactly when that entry is
// one. Switches: -bug config-while-uncommitted drops the first rule,
// -bug config-before-own-term-commit the second.
func (m *Machine[T, L, V]) ChangeConfig(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if !m.Membership || s.State[i] != Leader {
		return
	}
	log := s.Log[i]
	if !m.Has(BugConfigWhileUncommitted) && lastConfigIndex(log) > int(s.CommitIndex[i]) {
		return
	}
	if !m.Has(BugConfigBeforeOwnTermCommit) && !committedOwnTerm(s, i) {
		return
	}
	nextConfigs(ConfigOf(m, log), m.servers, func(c MemberConfig, j ServerID) {
		n := *s
		v := c.Value()
		n.Log[i] = log.Append(EntryOf[T]{Term: s.CurrentTerm[i], Value: v})
		emit(n, LabelOf[T, L]{Action: ActChangeConfig, I: i, J: j, Value: v})
	})
}

// committedOwnTerm reports whether leader i's commit index covers an entry
// of its current term.
func committedOwnTerm[T Int, L Seq[T, L], V Voters[L, V]](s *StateOf[T, L, V], i ServerID) bool {
	c := int(s.CommitIndex[i])
	return c > 0 && c <= s.Log[i].Len() && s.Log[i].Term(c) == s.CurrentTerm[i]
}

// validateMembership checks the membership constants.
func (c Config) validateMembership() error {
	switch {
	case !c.Membership && (c.InitVoters != 0 || c.Bugs&membershipBugs != 0):
		return fmt.Errorf("-init-voters and the bugs %v need -membership", membershipBugs)
	case c.Membership && c.Values >= ConfigValueBase:
		return fmt.Errorf("values=%d: with -membership, client values are 1..%d (larger values are configurations)", c.Values, ConfigValueBase-1)
	case c.InitVoters < 0 || c.InitVoters > c.Servers:
		return fmt.Errorf("init-voters=%d: want 0..%d (0: every server)", c.InitVoters, c.Servers)
	}
	return nil
}

// QuorumOverlap: no two disjoint quorums decide. Every leader was elected
// by a quorum (of its own configuration's voters) that meets the holders of
// every entry committed before its term: some voter of that quorum held the
// entry when it voted. Single-server changes keep consecutive
// configurations' quorums overlapping; this is the property that overlap
// is for, stated so that it holds across any number of changes (holders
// grow by replication, so two configurations far apart need not overlap).
//
//	QuorumOverlap == \A i \in Server, e \in elections :
//	    e.eterm > currentTerm[i] =>
//	        \E v \in DOMAIN e.evoterLog \cap ConfigOf(e.elog).voters :
//	            IsPrefix(SubSeq(log[i], 1, commitIndex[i]), e.evoterLog[v])
//
// evoterLog is write-only history that -merge drops: an election without
// it (merged) is not judged.
func QuorumOverlap(m *Model, s *State) string {
	for _, i := range m.servers {
		committed, ok := committedPrefix(s, i)
		if !ok || committed == "" {
			continue
		}
		for k := range s.Elections {
			e := &s.Elections[k]
			if e.Eterm <= s.CurrentTerm[i] || e.EvoterLog == "" {
				continue
			}
			voters := ConfigOf(&m.Machine, e.Elog).Voters
			met := false
			for _, v := range (e.EvoterLog.Dom() & voters).Members() {
				if l, _ := e.EvoterLog.Get(v); isPrefix(committed, l) {
					met = true
					break
				}
			}
			if !met {
				return fmt.Sprintf("leader %v of term %d was elected by %v in %v, none of which held %v committed on %v in term %d",
					e.Eleader, e.Eterm, (e.EvoterLog.Dom() & voters).Members(), ConfigOf(&m.Machine, e.Elog), committed, i, s.CurrentTerm[i])
			}
		}
	}
	return ""
}

// configsPresent calls f with every configuration of the state: the
// initial one, every server's, and the one each committed entry was
// committed in.
func (m *Machine[T, L, V]) configsPresent(s *StateOf[T, L, V], f func(MemberConfig) bool) bool {
	if !f(m.InitConfig()) {
		return false
	}
	for _, j := range m.servers {
		if !f(ConfigOf(m, s.Log[j])) {
			return false
		}
	}
	for _, c := range s.Committed {
		if c.Config != 0 && !f(DecodeConfig(c.Config)) {
			return false
		}
	}
	return true
}
