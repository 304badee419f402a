package spec

import (
	"bytes"
	"slices"
)

// Symmetry reduction and merging: the explorer's canonical encoding of a
// state's class (docs/explorer.md, "Symmetry and merging"). Both live in the
// explorer's encoding path only: the actions, Next and the trace checker
// never see a renamed state, and a counterexample is replayed through Next
// from Init, so its trace is a real behaviour.
//
// Symmetry is TLC's SYMMETRY over the group of all renamings of the servers
// and, with two or more values, of the values (Permutations(Server) and
// Permutations(Value) composed). A state's class is its orbit under that
// group; its representative is the renaming whose encoding is the smallest
// byte string, so that every member of a class has the same representative
// and the explorer counts orbits, as TLC does.
//
// Merging identifies states that differ only in what no action, invariant
// or reachability property reads before overwriting it:
//   - a non-leader's nextIndex and matchIndex (BecomeLeader sets both, every
//     reader is a leader's action, and a non-leader's own writes only
//     derive them from themselves);
//   - a non-candidate's votesResponded and votesGranted (Timeout clears
//     them, and only a candidate's RequestVote and BecomeLeader read them);
//   - the write-only history: voterLog, and the evotes and evoterLog of an
//     election record (no invariant reads them), and every message's mlog
//     (read only into voterLog).
//
// Merged, the explorer searches the quotient: every state it reaches is
// a real one and every counterexample a real behaviour, and a state it
// merges has the same successors up to the merged variables. The bag is
// merged as a multiset (two messages that differ only in mlog become one
// with both counts), so the bounds on the bag are checked on the state
// first reached, before merging: a merged search is for finding
// violations, not for counts to compare with TLC.

// renaming is one element of the symmetry group: server i becomes
// srv[i], value v becomes val[v] (nil: values keep their names).
type renaming struct {
	srv [MaxServers + 1]ServerID
	val []uint8
	cfg bool // membership: configuration values name servers
}

// canonicalizer computes canonical encodings for one worker: its scratch
// state and buffers are reused from state to state.
type canonicalizer struct {
	m        *Model
	symmetry bool
	merge    bool

	valPerms [][]uint8 // every renaming of the values (nil entry: identity)
	keys     [MaxServers + 1][]byte
	order    []ServerID // servers sorted by key
	cand     renaming
	merged   State
	renamed  State
	best     []byte
	try      []byte
	msgs     []BagEntry
	els      []Election
	all      []Log

	mergedEls  []Election
	mergedMsgs []BagEntry
}

func newCanonicalizer(m *Model, symmetry, values, merge bool) *canonicalizer {
	c := &canonicalizer{m: m, symmetry: symmetry, merge: merge}
	c.cand.cfg = m.Membership
	c.valPerms = [][]uint8{nil}
	if symmetry && values && len(m.values) > 1 {
		c.valPerms = nil
		forEachPermutation(len(m.values), func(p []int) {
			val := make([]uint8, len(m.values)+1)
			for k, v := range m.values {
				val[v] = m.values[p[k]]
			}
			c.valPerms = append(c.valPerms, val)
		})
	}
	return c
}

// encode appends the canonical encoding of s's class to b.
func (c *canonicalizer) encode(b []byte, s *State) []byte {
	if !c.symmetry && !c.merge {
		return c.m.Encode(b, s)
	}
	src := s
	if c.merge {
		c.mergeInto(&c.merged, s)
		src = &c.merged
	}
	if !c.symmetry {
		return c.m.Encode(b, src)
	}
	if c.sortServers(src) && len(c.valPerms) == 1 {
		return c.m.Encode(b, src) // one renaming to try, and it renames nothing
	}
	c.best = c.best[:0]
	first := true
	for _, val := range c.valPerms {
		c.cand.val = val
		c.eachServerRenaming(func() {
			c.rename(&c.renamed, src, &c.cand)
			c.try = c.m.Encode(c.try[:0], &c.renamed)
			if first || bytes.Compare(c.try, c.best) < 0 {
				c.best, c.try = c.try, c.best
				first = false
			}
		})
	}
	return append(b, c.best...)
}

// serverKey is what is compared to order servers before trying renamings:
// server i's own variables that name no server and no value, so that a
// renaming of s gives server π(i) the key server i had. Only the renamings
// that sort the servers by key are tried; which they are depends on the
// class alone, so the smallest encoding among them is still the class's.
func (c *canonicalizer) serverKey(k []byte, s *State, i ServerID) []byte {
	k = append(k[:0], s.CurrentTerm[i], byte(s.State[i]), s.CommitIndex[i], byte(s.Log[i].Len()))
	for x := 1; x <= s.Log[i].Len(); x++ {
		k = append(k, s.Log[i].Term(x))
	}
	vote := byte(0)
	switch s.VotedFor[i] {
	case Nil:
	case i:
		vote = 1
	default:
		vote = 2
	}
	k = append(k, vote, byte(s.VotesResponded[i].Len()), byte(s.VotesGranted[i].Len()))
	k = append(k, s.DurableLen[i], s.LearnedCommit[i], byte(s.Verdict[i]), s.TruncatedAtTerm[i], byte(s.StaleLog[i].Len()))
	// The persistence window (production profile): the persisted hard
	// state's term and mark, and how much is held and stale-durable.
	k = append(k, s.Persisted[i].CurrentTerm, s.Persisted[i].TruncatedAtTerm, byte(len(s.Held[i])), s.StaleDurable[i])
	// Power losses: the last batch's start, the ambiguous grants, damaged.
	damaged := byte(0)
	if s.Damaged.Has(i) {
		damaged = 1
	}
	return append(k, s.BatchStart[i], byte(s.VotesAmbiguous[i].Len()), damaged)
}

// sortServers orders the servers by key and reports whether the only
// renaming to try is the identity: the keys are distinct and already in
// order.
func (c *canonicalizer) sortServers(s *State) bool {
	c.order = append(c.order[:0], c.m.servers...)
	for _, i := range c.order {
		c.keys[i] = c.serverKey(c.keys[i], s, i)
	}
	slices.SortStableFunc(c.order, func(a, b ServerID) int { return bytes.Compare(c.keys[a], c.keys[b]) })
	for k := 1; k < len(c.order); k++ {
		if c.order[k] != c.order[k-1]+1 || bytes.Equal(c.keys[c.order[k-1]], c.keys[c.order[k]]) {
			return false
		}
	}
	return true
}

// eachServerRenaming sets c.cand.srv to every renaming that maps the
// servers, in key order, onto 1..N, trying every order within a run of
// equal keys, and calls f for each.
func (c *canonicalizer) eachServerRenaming(f func()) {
	var groups [][]ServerID
	for lo := 0; lo < len(c.order); {
		hi := lo + 1
		for hi < len(c.order) && bytes.Equal(c.keys[c.order[lo]], c.keys[c.order[hi]]) {
			hi++
		}
		groups = append(groups, c.order[lo:hi])
		lo = hi
	}
	var rec func(g, base int)
	rec = func(g, base int) {
		if g == len(groups) {
			f()
			return
		}
		grp := groups[g]
		forEachPermutation(len(grp), func(p []int) {
			for k, x := range p {
				c.cand.srv[grp[x]] = ServerID(base + k + 1)
			}
			rec(g+1, base+len(grp))
		})
	}
	rec(0, 0)
}

// permutationTable[n] lists every permutation of 0..n-1, for the sizes of
// a run of equal keys.
var permutationTable = func() [MaxServers + 1][][]int {
	var t [MaxServers + 1][][]int
	for n := range t {
		heapPermutations(n, func(p []int) { t[n] = append(t[n], slices.Clone(p)) })
	}
	return t
}()

// forEachPermutation calls f with every permutation of 0..n-1; f must not
// keep or change p.
func forEachPermutation(n int, f func(p []int)) {
	if n < len(permutationTable) {
		for _, p := range permutationTable[n] {
			f(p)
		}
		return
	}
	heapPermutations(n, f)
}

// heapPermutations calls f with every permutation of 0..n-1 (Heap's
// algorithm).
func heapPermutations(n int, f func(p []int)) {
	p := make([]int, n)
	for k := range p {
		p[k] = k
	}
	var gen func(k int)
	gen = func(k int) {
		if k <= 1 {
			f(p)
			return
		}
		for x := 0; x < k-1; x++ {
			gen(k - 1)
			if k%2 == 0 {
				p[x], p[k-1] = p[k-1], p[x]
			} else {
				p[0], p[k-1] = p[k-1], p[0]
			}
		}
		gen(k - 1)
	}
	gen(n)
}

// renameLog renames the values of a log and, with membership, the servers
// its configuration entries name.
func renameLog(l Log, r *renaming) Log {
	if (r.val == nil && !r.cfg) || len(l) == 0 {
		return l
	}
	b := []byte(l)
	for k := 1; k < len(b); k += 2 {
		switch {
		case r.cfg && IsConfigValue(b[k]):
			b[k] = renameConfig(b[k], &r.srv)
		case r.val != nil:
			b[k] = r.val[b[k]]
		}
	}
	return Log(b)
}

// renameConfig renames the servers of a configuration value.
func renameConfig(v uint8, srv *[MaxServers + 1]ServerID) uint8 {
	c := DecodeConfig(v)
	return MemberConfig{Voters: renameSet(c.Voters, srv), Learners: renameSet(c.Learners, srv)}.Value()
}

func renameSet(s ServerSet, srv *[MaxServers + 1]ServerID) ServerSet {
	var out ServerSet
	for id := ServerID(1); id <= MaxServers; id++ {
		if s.Has(id) {
			out = out.With(srv[id])
		}
	}
	return out
}

func renameVoterLog(v VoterLog, r *renaming) VoterLog {
	if len(v) == 0 {
		return v
	}
	var out VoterLog
	for _, j := range v.Dom().Members() {
		l, _ := v.Get(j)
		out = out.With(r.srv[j], renameLog(l, r))
	}
	return out
}

func renameMessage(msg *Message, r *renaming) {
	msg.Msource, msg.Mdest = r.srv[msg.Msource], r.srv[msg.Mdest]
	msg.Mentries = renameLog(msg.Mentries, r)
	msg.Mlog = renameLog(msg.Mlog, r)
}

// rename sets dst to s with the servers and values renamed by r. Every
// field of State is either renamed here or names neither a server nor a
// value (TestRenameCoversState keeps the list).
func (c *canonicalizer) rename(dst, s *State, r *renaming) {
	*dst = State{}
	for _, i := range c.m.servers {
		j := r.srv[i]
		dst.CurrentTerm[j] = s.CurrentTerm[i]
		dst.State[j] = s.State[i]
		dst.VotedFor[j] = r.srv[s.VotedFor[i]]
		dst.Log[j] = renameLog(s.Log[i], r)
		dst.CommitIndex[j] = s.CommitIndex[i]
		dst.VotesResponded[j] = renameSet(s.VotesResponded[i], &r.srv)
		dst.VotesGranted[j] = renameSet(s.VotesGranted[i], &r.srv)
		dst.VoterLog[j] = renameVoterLog(s.VoterLog[i], r)
		for _, k := range c.m.servers {
			dst.NextIndex[j][r.srv[k]] = s.NextIndex[i][k]
			dst.MatchIndex[j][r.srv[k]] = s.MatchIndex[i][k]
		}
		dst.DurableLen[j] = s.DurableLen[i]
		dst.LearnedCommit[j] = s.LearnedCommit[i]
		dst.Verdict[j] = s.Verdict[i]
		dst.TruncatedAtTerm[j] = s.TruncatedAtTerm[i]
		dst.StaleLog[j] = renameLog(s.StaleLog[i], r)
		// The production profile's persistence window (window.go).
		dst.Persisted[j] = PersistedOf[uint8]{CurrentTerm: s.Persisted[i].CurrentTerm, VotedFor: r.srv[s.Persisted[i].VotedFor],
			TruncatedAtTerm: s.Persisted[i].TruncatedAtTerm}
		dst.StaleDurable[j] = s.StaleDurable[i]
		// Power losses (power.go).
		dst.BatchStart[j] = s.BatchStart[i]
		dst.VotesAmbiguous[j] = renameSet(s.VotesAmbiguous[i], &r.srv)
		dst.RepairFrom[j] = renameSet(s.RepairFrom[i], &r.srv) // repair.go (Explore refuses -symmetry with -repair)
		if len(s.Held[i]) > 0 {
			held := make([]BagEntry, len(s.Held[i]))
			for k, e := range s.Held[i] {
				renameMessage(&e.M, r)
				held[k] = e
			}
			slices.SortFunc(held, func(a, b BagEntry) int { return compareMessage(&a.M, &b.M) })
			dst.Held[j] = held
		}
	}
	c.msgs = c.msgs[:0]
	for _, e := range s.Messages {
		renameMessage(&e.M, r)
		c.msgs = append(c.msgs, e)
	}
	slices.SortFunc(c.msgs, func(a, b BagEntry) int { return compareMessage(&a.M, &b.M) })
	dst.Messages = c.msgs
	c.els = c.els[:0]
	for _, e := range s.Elections {
		c.els = append(c.els, Election{Eterm: e.Eterm, Eleader: r.srv[e.Eleader], Elog: renameLog(e.Elog, r),
			Evotes: renameSet(e.Evotes, &r.srv), EvoterLog: renameVoterLog(e.EvoterLog, r)})
	}
	slices.SortFunc(c.els, func(a, b Election) int { return compareElection(&a, &b) })
	dst.Elections = c.els
	dst.AllLogs = s.AllLogs
	if (r.val != nil || r.cfg) && len(s.AllLogs) > 0 {
		c.all = c.all[:0]
		for _, l := range s.AllLogs {
			c.all = append(c.all, renameLog(l, r))
		}
		slices.Sort(c.all)
		dst.AllLogs = c.all
	}
	dst.Committed = s.Committed
	if r.cfg && len(s.Committed) > 0 {
		com := make([]CommittedEntry, len(s.Committed))
		for k, x := range s.Committed {
			x.Config = renameConfig(x.Config, &r.srv)
			com[k] = x
		}
		slices.SortFunc(com, func(a, b CommittedEntry) int { return compareCommitted(&a, &b) })
		dst.Committed = com
	}
	dst.CrashesLeft = s.CrashesLeft
	dst.CorruptionsLeft = s.CorruptionsLeft
	dst.BadCommitsLeft = s.BadCommitsLeft
	dst.Damaged = renameSet(s.Damaged, &r.srv)
	dst.PowerLossesLeft = s.PowerLossesLeft
	if len(s.Repairs) > 0 {
		reps := make([]Repair, len(s.Repairs))
		for k, x := range s.Repairs {
			reps[k] = Repair{Server: r.srv[x.Server], Term: x.Term, Log: renameLog(x.Log, r)}
		}
		slices.SortFunc(reps, func(a, b Repair) int { return compareRepair(&a, &b) })
		dst.Repairs = reps
	}
	dst.Wipe = WipeVars{Left: s.Wipe.Left, Wiped: renameSet(s.Wipe.Wiped, &r.srv), Unconfirmed: renameSet(s.Wipe.Unconfirmed, &r.srv),
		Lost: renameSet(s.Wipe.Lost, &r.srv)}
	for _, i := range c.m.servers {
		dst.Wipe.Answered[r.srv[i]] = renameSet(s.Wipe.Answered[i], &r.srv)
		dst.Wipe.Known[r.srv[i]] = renameSet(s.Wipe.Known[i], &r.srv)
	}
}

// mergeInto sets dst to s with the merged variables (above) at fixed
// values. dst's slices are the canonicalizer's scratch.
func (c *canonicalizer) mergeInto(dst, s *State) {
	*dst = *s
	for _, i := range c.m.servers {
		if s.State[i] != Leader {
			for _, j := range c.m.servers {
				dst.NextIndex[i][j] = 1
				dst.MatchIndex[i][j] = 0
			}
		}
		if s.State[i] != Candidate {
			dst.VotesResponded[i] = 0
			dst.VotesGranted[i] = 0
			dst.VotesAmbiguous[i] = 0
		}
		dst.VoterLog[i] = ""
	}
	if len(s.Elections) > 0 {
		els := c.mergedEls[:0]
		for _, e := range s.Elections {
			els = append(els, Election{Eterm: e.Eterm, Eleader: e.Eleader, Elog: e.Elog})
		}
		slices.SortFunc(els, func(a, b Election) int { return compareElection(&a, &b) })
		c.mergedEls = els
		dst.Elections = slices.CompactFunc(els, func(a, b Election) bool { return compareElection(&a, &b) == 0 })
	}
	if len(s.Messages) > 0 {
		msgs := c.mergedMsgs[:0]
		for _, e := range s.Messages {
			e.M.Mlog = ""
			msgs = append(msgs, e)
		}
		c.mergedMsgs = msgs
		slices.SortStableFunc(msgs, func(a, b BagEntry) int { return compareMessage(&a.M, &b.M) })
		out := msgs[:1]
		for _, e := range msgs[1:] {
			if last := &out[len(out)-1]; compareMessage(&last.M, &e.M) == 0 {
				last.N += e.N
				continue
			}
			out = append(out, e)
		}
		dst.Messages = out
	}
}
