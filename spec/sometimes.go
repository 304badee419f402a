package spec

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Sometimes is a reachability property ("sometimes P"): the explorer
// reports whether some reachable in-bounds state (State) or step (Step)
// satisfies it, so that no invariant passes vacuously. Exactly one of State
// and Step is set.
type Sometimes struct {
	Name       string
	Profile    *Profile // nil: both profiles
	Production bool     // only with the production actions
	PowerLoss  bool     // only with power losses (power.go)
	Repair     bool     // only with repair from peers (repair.go)
	Marked     bool     // only with Config.MarkedVotes
	Doc        string
	State      func(m *Model, s *State) bool
	Step       func(m *Model, pre *State, l Label, post *State) bool
}

var (
	onlyRaft    = func() *Profile { p := ProfileRaft; return &p }()
	onlyDurable = func() *Profile { p := ProfileDurable; return &p }()
)

func anyServer(m *Model, pred func(i ServerID) bool) bool {
	for _, i := range m.servers {
		if pred(i) {
			return true
		}
	}
	return false
}

// SometimesProperties lists the reachability checks.
var SometimesProperties = []Sometimes{
	{Name: "LeaderElected", Doc: "some server is leader",
		State: func(m *Model, s *State) bool {
			return anyServer(m, func(i ServerID) bool { return s.State[i] == Leader })
		}},
	{Name: "EntryCommitted", Doc: "some server's commitIndex is positive",
		State: func(m *Model, s *State) bool {
			return anyServer(m, func(i ServerID) bool { return s.CommitIndex[i] > 0 })
		}},
	{Name: "FollowerLearnsCommit", Doc: "a server that is not leader has a positive commitIndex",
		State: func(m *Model, s *State) bool {
			return anyServer(m, func(i ServerID) bool { return s.State[i] != Leader && s.CommitIndex[i] > 0 })
		}},
	{Name: "ConflictTruncates", Doc: "a follower removes a conflicting entry",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return (l.Action == ActHandleAppendEntriesRequest || l.Action == ActHandleAppendEntriesBatch) && l.Branch == BranchConflict
		}},
	{Name: "DuplicateInBag", Doc: "a message is in the bag twice",
		State: func(m *Model, s *State) bool {
			for _, e := range s.Messages {
				if e.N >= 2 {
					return true
				}
			}
			return false
		}},
	{Name: "StaleResponseDropped", Doc: "a response with a stale term is dropped",
		Step: func(m *Model, pre *State, l Label, post *State) bool { return l.Action == ActDropStaleResponse }},
	{Name: "TwoLeadersElected", Doc: "elections holds two records (leadership changed)",
		State: func(m *Model, s *State) bool { return len(s.Elections) >= 2 }},
	{Name: "RestartAfterCommit", Profile: onlyRaft, Doc: "a server restarts while some commitIndex is positive",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActRestart && anyServer(m, func(i ServerID) bool { return pre.CommitIndex[i] > 0 })
		}},
	{Name: "CrashAfterCommit", Profile: onlyDurable, Doc: "a server crashes after an entry was committed",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActCrash && len(pre.Committed) > 0
		}},
	{Name: "CrashLosesUnsynced", Profile: onlyDurable, Doc: "a crash loses appended but unsynced entries",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActCrash && int(l.Cut) < pre.Log[l.I].Len()
		}},
	{Name: "TruncationLost", Profile: onlyDurable, Doc: "a crash brings back entries a truncation removed (with -bug truncation-not-synced, or inside a persistence window)",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActCrash && !pre.Log[l.I].HasPrefix(post.Log[l.I])
		}},
	{Name: "FollowerFlushes", Profile: onlyDurable, Doc: "a follower flushes entries it appended (its ack waited for this)",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActFlush && pre.State[l.I] == Follower
		}},
	{Name: "LearnedAheadOfDurable", Profile: onlyDurable, Doc: "a server learned a commit index beyond its durable log (the fence's 'behind' case)",
		State: func(m *Model, s *State) bool {
			return anyServer(m, func(i ServerID) bool { return s.LearnedCommit[i] > s.DurableLen[i] })
		}},
	{Name: "FollowerLagsLearned", Profile: onlyDurable, Production: true,
		Doc: "a CLEAN server that is not leader learned a commit beyond its durable log: with the clamp, a leader that committed through its followers before its own fdatasync and stepped down (replication lag, not a fence: impl/raft testdata/replication_lag_leader.txt)",
		State: func(m *Model, s *State) bool {
			return anyServer(m, func(i ServerID) bool {
				return s.State[i] != Leader && s.Verdict[i] == Clean && s.LearnedCommit[i] > s.DurableLen[i]
			})
		}},
	{Name: "MemberTruncated", Profile: onlyDurable, Doc: "a member's verdict is TRUNCATED",
		State: func(m *Model, s *State) bool {
			return anyServer(m, func(i ServerID) bool { return s.Verdict[i] == Truncated })
		}},
	{Name: "CorruptAfterCommit", Profile: onlyDurable, Doc: "a member loses durable entries after an entry was committed",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActCorrupt && len(pre.Committed) > 0
		}},
	{Name: "TruncatedVoterAsked", Profile: onlyDurable, Doc: "a TRUNCATED member handles a vote request",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActHandleRequestVoteRequest && pre.Verdict[l.I] == Truncated
		}},
	{Name: "FenceReleased", Profile: onlyDurable, Doc: "a TRUNCATED member is repaired",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return pre.Verdict[l.I] == Truncated && post.Verdict[l.I] == Clean
		}},
	{Name: "LeaderAfterCorruption", Profile: onlyDurable, Doc: "a leader is elected after a corruption",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActBecomeLeader && int(pre.CorruptionsLeft) < m.Corruptions
		}},
	{Name: "CrashRevertsHardState", Profile: onlyDurable, Production: true, Doc: "a crash inside a persistence window brings back the hard state before it",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActCrash && hardStateOf(pre, l.I) != hardStateOf(post, l.I)
		}},
	{Name: "HeldReleased", Profile: onlyDurable, Production: true, Doc: "a Persist releases messages that waited for it",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActPersist && len(pre.Held[l.I]) > 0
		}},
	{Name: "HeartbeatAckedDurable", Profile: onlyDurable, Production: true, Doc: "a heartbeat beyond the durable log is answered with the durable prefix",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActHandleAppendEntriesBatch && l.Branch == BranchDurablePrefix
		}},
	{Name: "SnapshotInstalled", Profile: onlyDurable, Production: true, Doc: "a follower installs a snapshot",
		Step: func(m *Model, pre *State, l Label, post *State) bool { return l.Action == ActInstallSnapshot }},
	{Name: "SnapshotReplacesConflict", Profile: onlyDurable, Production: true, Doc: "an installed snapshot replaces entries of another term",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActInstallSnapshot && !post.Log[l.I].HasPrefix(pre.Log[l.I])
		}},
	{Name: "RestartFromSnapshot", Profile: onlyDurable, Production: true, Doc: "a restart brings the commit index back from a snapshot",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActCrashFromSnapshot || l.Action == ActCorruptFromSnapshot
		}},
	{Name: "RepairedByPeers", Profile: onlyDurable, Repair: true, Doc: "a TRUNCATED member is released by its peers' answers (repair.go)",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActHandleRepairResponse && pre.Verdict[l.I] == Truncated && post.Verdict[l.I] == Clean
		}},
	{Name: "RepairTakesLog", Profile: onlyDurable, Repair: true, Doc: "a TRUNCATED member takes a peer's more up-to-date log",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActHandleRepairResponse && pre.Log[l.I] != post.Log[l.I]
		}},
	{Name: "RepairedBesideTruncated", Profile: onlyDurable, Repair: true, Doc: "a member is released by its peers while another member is TRUNCATED (two TRUNCATED of four)",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActHandleRepairResponse && pre.Verdict[l.I] == Truncated && post.Verdict[l.I] == Clean &&
				anyServer(m, func(i ServerID) bool { return i != l.I && pre.Verdict[i] == Truncated })
		}},
	{Name: "RepairSnapshotInstalled", Profile: onlyDurable, Production: true, Repair: true,
		Doc: "a TRUNCATED member installs a snapshot sent by a peer that does not lead (a repair answered with a snapshot, repairsnap.go)",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActInstallSnapshot && pre.Verdict[l.I] == Truncated && pre.State[l.J] != Leader
		}},
	{Name: "LeaderAfterRepair", Profile: onlyDurable, Repair: true, Doc: "a leader is elected with the vote of a member repaired by its peers",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			if l.Action != ActBecomeLeader {
				return false
			}
			for _, r := range post.Repairs {
				if post.VotesGranted[l.I].Has(r.Server) {
					return true
				}
			}
			return false
		}},
	{Name: "SyncedBatchDamaged", Profile: onlyDurable, PowerLoss: true, Doc: "a power loss damages a member's last synced batch",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActPowerLoss && post.Damaged.Has(l.I) && !pre.Damaged.Has(l.I)
		}},
	{Name: "CommittedBatchDamaged", Profile: onlyDurable, PowerLoss: true, Doc: "the damaged batch held a committed entry",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			if l.Action != ActPowerLoss || !post.Damaged.Has(l.I) || pre.Damaged.Has(l.I) {
				return false
			}
			for _, c := range pre.Committed {
				if c.Index > pre.BatchStart[l.I] && holdsDurably(pre, l.I, c.Index, c.Term) {
					return true
				}
			}
			return false
		}},
	{Name: "AllAmbiguous", Profile: onlyDurable, PowerLoss: true, Doc: "every member is AMBIGUOUS at once",
		State: func(m *Model, s *State) bool {
			return !anyServer(m, func(i ServerID) bool { return s.Verdict[i] != Ambiguous })
		}},
	{Name: "UnanimousElection", Profile: onlyDurable, PowerLoss: true, Doc: "a leader is elected with an AMBIGUOUS voter's grant (every server granted)",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActBecomeLeader && pre.VotesAmbiguous[l.I] != 0
		}},
	{Name: "AmbiguousRepaired", Profile: onlyDurable, PowerLoss: true, Doc: "an AMBIGUOUS follower is repaired by a leader of a newer term",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action != ActBecomeLeader && pre.Verdict[l.I] == Ambiguous && post.Verdict[l.I] == Clean
		}},
	{Name: "TruncatedGrantCounts", Profile: onlyDurable, Marked: true, Doc: "a leader is elected unanimously with the marked grant of a member TRUNCATED at the time",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActBecomeLeader && anyServer(m, func(j ServerID) bool { return pre.VotesAmbiguous[l.I].Has(j) && pre.Verdict[j] == Truncated })
		}},
	{Name: "TruncatedLeads", Profile: onlyDurable, Marked: true, Doc: "a TRUNCATED candidate is elected unanimously (and is CLEAN)",
		Step: func(m *Model, pre *State, l Label, post *State) bool {
			return l.Action == ActBecomeLeader && pre.Verdict[l.I] == Truncated
		}},
}

// SometimesFor lists the reachability properties of the model's profile.
func (m *Model) SometimesFor() []Sometimes {
	var out []Sometimes
	for _, p := range SometimesProperties {
		if (p.Profile == nil || *p.Profile == m.Profile) && (!p.Production || m.Production) && (!p.PowerLoss || m.PowerLosses > 0) && (!p.Repair || m.Repair) && (!p.Marked || m.MarkedVotes) {
			out = append(out, p)
		}
	}
	return out
}

// Reachability is the explorer's finding for one Sometimes property.
type Reachability struct {
	Name  string
	Found bool

	witnessParent uint64 // fingerprint of the state the witness step starts from
	witnessFP     uint64
	witnessLabel  Label
	witnessState  *State
	witnessTrace  []Step
}

// Witness is a behaviour reaching the property, when found.
func (r *Reachability) Witness() []Step { return r.witnessTrace }

type sometimesTracker struct {
	props []Sometimes
	found []atomic.Bool
	mu    sync.Mutex
	res   []Reachability
}

func newSometimesTracker(m *Model) *sometimesTracker {
	props := m.SometimesFor()
	t := &sometimesTracker{props: props, found: make([]atomic.Bool, len(props)), res: make([]Reachability, len(props))}
	for k, p := range props {
		t.res[k].Name = p.Name
	}
	return t
}

func (t *sometimesTracker) record(k int, parentFP uint64, l Label, post *State, fp uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.res[k].Found {
		return
	}
	kept := *post
	t.res[k] = Reachability{Name: t.props[k].Name, Found: true,
		witnessParent: parentFP, witnessFP: fp, witnessLabel: l, witnessState: &kept}
	t.found[k].Store(true)
}

// state is called on every new in-bounds state.
func (t *sometimesTracker) state(m *Model, s *State, parentFP uint64, l Label, fp uint64) {
	for k := range t.props {
		if p := &t.props[k]; p.State != nil && !t.found[k].Load() && p.State(m, s) {
			t.record(k, parentFP, l, s, fp)
		}
	}
}

// step is called on every generated step into the bounds.
func (t *sometimesTracker) step(m *Model, pre *State, l Label, post *State, parentFP uint64) {
	for k := range t.props {
		if p := &t.props[k]; p.Step != nil && !t.found[k].Load() && p.Step(m, pre, l, post) {
			t.record(k, parentFP, l, post, 1)
		}
	}
}

// walk evaluates the properties along one walk (in bounds by
// construction), keeping the walk's prefix as the witness.
func (t *sometimesTracker) walk(m *Model, steps []Step) {
	for k := range t.props {
		if t.found[k].Load() {
			continue
		}
		p := &t.props[k]
		for n, st := range steps {
			if !m.InBounds(st.State) {
				break
			}
			hit := (p.State != nil && p.State(m, st.State)) ||
				(p.Step != nil && n > 0 && p.Step(m, steps[n-1].State, st.Label, st.State))
			if hit {
				t.mu.Lock()
				if !t.res[k].Found {
					t.res[k] = Reachability{Name: p.Name, Found: true, witnessTrace: append([]Step(nil), steps[:n+1]...)}
					t.found[k].Store(true)
				}
				t.mu.Unlock()
				break
			}
		}
	}
}

func (t *sometimesTracker) results() []Reachability {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Reachability(nil), t.res...)
}

func (x *explorer) witness(r *Reachability, p Sometimes) []Step {
	if r.witnessParent == 0 && r.witnessLabel.Action == 0 {
		return []Step{{State: r.witnessState}}
	}
	trace, err := x.pathTo(r.witnessParent)
	if err != nil {
		return nil
	}
	trace, err = x.lastStep(trace, r.witnessState, func(pre *State, l Label, n *State) bool {
		if p.Step != nil {
			return p.Step(x.m, pre, l, n)
		}
		return p.State(x.m, n)
	})
	if err != nil {
		return nil
	}
	return trace
}

// CheckReached returns an error naming the first of the wanted properties
// that no reachable state satisfied. names = ["all"] wants every property.
func CheckReached(reached []Reachability, names []string) error {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	known := map[string]bool{}
	for _, r := range reached {
		known[r.Name] = true
		if (want["all"] || want[r.Name]) && !r.Found {
			return fmt.Errorf("sometimes %s: unreachable within the bounds", r.Name)
		}
	}
	for n := range want {
		if n != "all" && !known[n] {
			return fmt.Errorf("sometimes %s: no such property in this profile", n)
		}
	}
	return nil
}
