package raft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/durableraft/durableraft/impl/raft/quorum"
	"github.com/durableraft/durableraft/impl/raft/tracker"
)

// Membership change (docs/membership.md): single-server changes with
// learners, the configuration in the log, in force from the append of its
// entry. The quorum arithmetic is package quorum's, the configuration and
// the per-member progress package tracker's; this file holds the
// configuration entries and which one is in force.

// Membership is a configuration: its voters, its learners (members that
// receive the log but never vote, never count for commit and never
// campaign) and the ids removed from the cluster, which are never reused.
// Every list is sorted, without repeats or None; the three are disjoint and
// Voters is not empty.
type Membership struct {
	Voters, Learners, Removed []NodeID
}

func toIDs(ids []NodeID) []uint64 {
	out := make([]uint64, len(ids))
	for k, id := range ids {
		out[k] = uint64(id)
	}
	return out
}

func fromIDs(ids []uint64) []NodeID {
	if len(ids) == 0 {
		return nil
	}
	out := make([]NodeID, len(ids))
	for k, id := range ids {
		out[k] = NodeID(id)
	}
	return out
}

func (m Membership) tracker() tracker.Config {
	return tracker.Config{Voters: quorum.Majority(toIDs(m.Voters)), Learners: nilIfEmpty(toIDs(m.Learners)), Removed: nilIfEmpty(toIDs(m.Removed))}
}

func nilIfEmpty(ids []uint64) []uint64 {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

func membershipOf(c tracker.Config) Membership {
	return Membership{Voters: fromIDs(c.Voters), Learners: fromIDs(c.Learners), Removed: fromIDs(c.Removed)}
}

// Valid checks the invariants of Membership.
func (m Membership) Valid() error { return m.tracker().Valid() }

func (m Membership) String() string { return m.tracker().String() }

// A configuration entry is an ordinary entry whose data is
//
//	magic     6 bytes   "\x00DRCF"+"\x01" (the second byte on: the format's version)
//	voters    uvarint count, then the ids, uvarint each, increasing
//	learners  idem
//	removed   idem
//
// and nothing after. The WAL, snapshots and messages carry it as any
// entry. Propose refuses data that begins with the magic (ErrReservedData):
// a client cannot forge a configuration.
var configMagic = []byte("\x00DRCF\x01")

// configIDsMax bounds each list of a decoded configuration.
const configIDsMax = 1 << 12

// Errors of membership changes.
var (
	// ErrReservedData: a proposal's data begins as a configuration entry.
	ErrReservedData = errors.New("raft: proposal data begins with the configuration entry marker")
	// ErrConfigPending: the previous configuration change is not committed
	// yet (one change at a time).
	ErrConfigPending = errors.New("raft: a configuration change is not committed yet; one change at a time")
	// ErrConfigOwnTerm: the leader has not committed an entry of its own
	// term yet (the fix of Ongaro's 2015 single-server change bug; the
	// election no-op commits one within a round trip).
	ErrConfigOwnTerm = errors.New("raft: the leader has not committed an entry of its term yet")
	// ErrLearnerBehind: a learner is promoted only once its durable log
	// covers the leader's commit index.
	ErrLearnerBehind = errors.New("raft: the learner has not caught up")
	// ErrNotVoter: the node is not a voter of its configuration.
	ErrNotVoter = errors.New("raft: not a voter of the configuration in force")
	// The configuration does not allow the change (package tracker).
	ErrRemovedID  = tracker.ErrRemovedID
	ErrMember     = tracker.ErrMember
	ErrNotMember  = tracker.ErrNotMember
	ErrNotLearner = tracker.ErrNotLearner
	ErrLastVoter  = tracker.ErrLastVoter
)

// IsConfigEntry reports whether entry data is a configuration entry's.
func IsConfigEntry(data []byte) bool { return bytes.HasPrefix(data, configMagic) }

// EncodeMembership is the data of the configuration entry carrying m (m
// must be valid).
func EncodeMembership(m Membership) []byte {
	b := append([]byte(nil), configMagic...)
	for _, l := range [][]NodeID{m.Voters, m.Learners, m.Removed} {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, id := range l {
			b = binary.AppendUvarint(b, uint64(id))
		}
	}
	return b
}

// DecodeMembership decodes a configuration entry's data strictly: the
// magic, three lists within configIDsMax, a valid configuration, nothing
// after, and an encoding that re-encodes to itself.
func DecodeMembership(data []byte) (Membership, error) {
	if !IsConfigEntry(data) {
		return Membership{}, errors.New("raft: not a configuration entry")
	}
	p := data[len(configMagic):]
	var lists [3][]NodeID
	for k := range lists {
		n, w := binary.Uvarint(p)
		if w <= 0 || n > configIDsMax || n > uint64(len(p)) {
			return Membership{}, fmt.Errorf("raft: configuration entry: bad count")
		}
		p = p[w:]
		for j := uint64(0); j < n; j++ {
			id, w := binary.Uvarint(p)
			if w <= 0 {
				return Membership{}, fmt.Errorf("raft: configuration entry: bad id")
			}
			lists[k], p = append(lists[k], NodeID(id)), p[w:]
		}
	}
	m := Membership{Voters: lists[0], Learners: lists[1], Removed: lists[2]}
	switch {
	case len(p) != 0:
		return Membership{}, fmt.Errorf("raft: configuration entry: %d trailing bytes", len(p))
	case m.Valid() != nil:
		return Membership{}, fmt.Errorf("raft: configuration entry: %w", m.Valid())
	case !bytes.Equal(EncodeMembership(m), data):
		return Membership{}, errors.New("raft: configuration entry: not in canonical form")
	}
	return m, nil
}

// confAt is a configuration and the index of the entry that carries it.
type confAt struct {
	index uint64
	cfg   tracker.Config
}

// confHistory is the node's configurations.
//
// Invariants (checkConfInvariants): at least one; the first is the
// configuration in force at the compaction point (index <= log.first-1:
// the initial one at 0, a snapshot's, or a compacted entry's); the others
// are the configuration entries of the log in (first-1, last], in
// increasing index; the tracker's configuration is the last one.
type confHistory []confAt

func (h confHistory) last() confAt { return h[len(h)-1] }

// at is the configuration in force at index (index >= h[0].index).
func (h confHistory) at(index uint64) tracker.Config {
	k := len(h) - 1
	for k > 0 && h[k].index > index {
		k--
	}
	return h[k].cfg
}

// noteEntries records the configuration entries among ents, appended to
// the log; it reports whether one was.
func (n *Node) noteEntries(ents []Entry) bool {
	found := false
	for k := range ents {
		if !IsConfigEntry(ents[k].Data) {
			continue
		}
		m, err := DecodeMembership(ents[k].Data)
		if err != nil {
			failf("configuration entry %d in the log: %v", ents[k].Index, err) // Validate and ChangeConfig let none in
		}
		n.confs = append(n.confs, confAt{index: ents[k].Index, cfg: m.tracker()})
		found = true
	}
	if found {
		n.applyConfig()
	}
	return found
}

// truncateConfs drops the configurations of entries from index from on: a
// truncation restores the previous configuration.
func (n *Node) truncateConfs(from uint64) {
	k := len(n.confs)
	for k > 1 && n.confs[k-1].index >= from {
		k--
	}
	if k < len(n.confs) {
		n.confs = n.confs[:k]
		n.applyConfig()
	}
}

// compactConfs makes the configuration in force at through the base.
func (n *Node) compactConfs(through uint64) {
	k := 0
	for k+1 < len(n.confs) && n.confs[k+1].index <= through {
		k++
	}
	n.confs = append(confHistory(nil), n.confs[k:]...)
}

// applyConfig puts the latest configuration in force (from its append).
func (n *Node) applyConfig() {
	c := n.confs.last().cfg
	if c.Equal(n.trk.Config) {
		return
	}
	n.trk.Reconfigure(c, n.log.last+1)
	n.confChanged = true
	// A transfer's target stays a voter: a leader changes its configuration
	// only by its own changes, refused during a transfer (checkInvariants).
}

// isVoter reports whether id is a voter of the configuration in force.
func (n *Node) isVoter(id NodeID) bool { return n.trk.Config.IsVoter(uint64(id)) }

// Membership is the configuration in force (the latest in the log).
func (n *Node) Membership() Membership { return membershipOf(n.trk.Config.Clone()) }

// MembershipAt is the configuration in force at index, for a snapshot at
// index to record; index must be at least the compaction point.
func (n *Node) MembershipAt(index uint64) (Membership, error) {
	if index < n.confs[0].index || index+1 < n.log.first || index > n.log.last {
		return Membership{}, fmt.Errorf("raft: configuration at %d: the log holds (%d, %d]", index, n.log.first-1, n.log.last)
	}
	return membershipOf(n.confs.at(index).Clone()), nil
}

// ConfChangeKind is a kind of single-server change.
type ConfChangeKind = tracker.ChangeKind

// ConfChange is a single-server membership change: add a new id as a
// learner, promote a learner to voter, or remove a member.
type ConfChange struct {
	Kind ConfChangeKind
	ID   NodeID
}

// The kinds of ConfChange.
const (
	ConfAddLearner = tracker.AddLearner
	ConfPromote    = tracker.Promote
	ConfRemove     = tracker.Remove
)

// ChangeConfig appends the configuration entry of one single-server change
// (spec ChangeConfig) and returns its index; the new configuration is in
// force at once. It is refused, with nothing changed, unless the node
// leads (ErrNotLeader), its previous change is committed
// (ErrConfigPending), it has committed an entry of its own term
// (ErrConfigOwnTerm), the change is one from its configuration (a removed
// id is never reused: ErrRemovedID; ErrMember, ErrNotMember,
// ErrNotLearner, ErrLastVoter), and, for a promotion, the learner's
// durable log covers the commit index (ErrLearnerBehind). A leader that
// removes itself leads on, not counting itself, until the change commits;
// then it hands leadership to the most up-to-date voter and steps down.
func (n *Node) ChangeConfig(ch ConfChange) (uint64, error) {
	defer n.checkInvariants()
	return n.changeConfig(ch)
}

// changeConfig is ChangeConfig without the invariants' check (the caller's).
func (n *Node) changeConfig(ch ConfChange) (uint64, error) {
	switch {
	case n.walFailed:
		return 0, ErrWALFailed
	case n.role != RoleLeader:
		return 0, ErrNotLeader
	case n.transferee != None:
		return 0, ErrTransferring
	case n.log.last >= IndexMax:
		return 0, ErrProposalDropped
	}
	if err := n.changeGuards(); err != nil {
		return 0, err
	}
	next, err := n.trk.Config.Apply(tracker.Change{Kind: ch.Kind, ID: uint64(ch.ID)})
	if err != nil {
		return 0, fmt.Errorf("raft: %w", err)
	}
	if ch.Kind == ConfPromote {
		if pr := n.trk.Get(uint64(ch.ID)); pr.Match < n.log.committed {
			return 0, fmt.Errorf("%w: learner %d has %d of the committed %d", ErrLearnerBehind, ch.ID, pr.Match, n.log.committed)
		}
	}
	e := Entry{Index: n.log.last + 1, Term: n.hs.Term, Data: EncodeMembership(membershipOf(next))}
	n.log.append(e)
	n.noteEntries([]Entry{e})
	if n.tr != nil {
		n.tr.appendLog(e)
		n.tr.changeConfig(ch.ID, e.Data)
	}
	n.bcastPending = true
	n.maybeCommit()
	n.maybeStepDownRemoved()
	return e.Index, nil
}

// maybeAutoPromote is Config.AutoPromote: a leader promotes its first
// learner whose acknowledged match covers the commit index, once
// ChangeConfig would take the promotion (the same change, the same guards,
// the same trace as an operator's request).
func (n *Node) maybeAutoPromote() {
	if !n.cfg.AutoPromote || n.role != RoleLeader || len(n.trk.Config.Learners) == 0 || n.transferee != None || n.walFailed ||
		n.changeGuards() != nil {
		return
	}
	for _, id := range n.trk.Config.Learners {
		if n.trk.Get(id).Match >= n.log.committed {
			if _, err := n.changeConfig(ConfChange{Kind: ConfPromote, ID: NodeID(id)}); err != nil {
				failf("automatic promotion of %d refused: %v", id, err) // its conditions were just checked
			}
			return
		}
	}
}

// changeGuards are ChangeConfig's two conditions (docs/membership.md).
func (n *Node) changeGuards() error {
	if !n.has(BugConfigWhileUncommitted) && n.confs.last().index > n.log.committed {
		return fmt.Errorf("%w: the change at %d, committed %d", ErrConfigPending, n.confs.last().index, n.log.committed)
	}
	if !n.has(BugConfigBeforeOwnTermCommit) && (n.log.committed == 0 || n.log.mustTerm(n.log.committed) != n.hs.Term) {
		return fmt.Errorf("%w: committed %d, term %d", ErrConfigOwnTerm, n.log.committed, n.hs.Term)
	}
	return nil
}

// maybeStepDownRemoved: a leader whose removal is committed hands
// leadership to the voter with the highest match (MsgTimeoutNow, when
// that voter holds the whole log) and steps down. It no longer counts in
// any quorum and, not a voter, never campaigns again.
func (n *Node) maybeStepDownRemoved() {
	if n.role != RoleLeader || n.isVoter(n.id) || n.confs.last().index > n.log.committed {
		return
	}
	var best *tracker.Progress
	for _, id := range n.trk.Order {
		pr := n.trk.Progress[id]
		if id != uint64(n.id) && !pr.Learner && (best == nil || pr.Match > best.Match) {
			best = pr
		}
	}
	if best != nil && best.Match == n.log.last {
		n.sendTimeoutNow(NodeID(best.ID))
	}
	n.stepDown()
}

func (n *Node) checkConfInvariants() {
	h := n.confs
	if !(len(h) >= 1 && h[0].index+1 <= n.log.first) {
		failf("configurations %v with the log from %d", h, n.log.first)
	}
	for k := 1; k < len(h); k++ {
		if !(h[k].index > h[k-1].index && h[k].index >= n.log.first && h[k].index <= n.log.last) {
			failf("configuration at %d after %d, log (%d, %d]", h[k].index, h[k-1].index, n.log.first-1, n.log.last)
		}
	}
	if !h.last().cfg.Equal(n.trk.Config) {
		failf("configuration in force %v, latest %v", n.trk.Config, h.last().cfg)
	}
	if err := n.trk.Check(); err != nil {
		failf("%v", err)
	}
	if (n.role == RoleLeader) != n.trk.Leading() {
		failf("role %v with progress %v", n.role, n.trk.Leading())
	}
}

// sortedIDs returns ids sorted (a copy).
func sortedIDs(ids []NodeID) []NodeID { return slices.Sorted(slices.Values(ids)) }

// snapshotConfig is the configuration a MsgSnap carries (Validate checked
// it), or the initial one.
func (n *Node) snapshotConfig(m *Message) tracker.Config {
	if len(m.Entries) == 1 {
		mb, err := DecodeMembership(m.Entries[0].Data)
		if err != nil {
			failf("validated snapshot configuration: %v", err)
		}
		return mb.tracker()
	}
	return n.initialConfig()
}

// initialConfig is Config.Voters as a configuration.
func (n *Node) initialConfig() tracker.Config {
	return Membership{Voters: sortedIDs(n.cfg.Voters)}.tracker()
}

// bootConfig builds the configurations at boot: at the compaction point
// the snapshot's (Boot.Membership) or the initial one, then every
// configuration entry storage holds after the snapshot (or the compaction
// point). It reads those entries once.
func (n *Node) bootConfig(boot Boot) error {
	base := n.initialConfig()
	if boot.Membership != nil {
		if err := boot.Membership.Valid(); err != nil {
			return fmt.Errorf("raft: boot: the snapshot's configuration: %w", err)
		}
		base = boot.Membership.tracker()
	}
	n.trk = tracker.New(base)
	n.confs = confHistory{{index: n.log.first - 1, cfg: base}}
	from := max(n.log.first, boot.Snapshot.Index+1)
	for lo := from; lo <= n.log.last; {
		ents, err := n.log.entries(lo, n.log.last+1, 1<<26)
		if err != nil {
			return fmt.Errorf("raft: boot: reading the log for configuration entries: %w", err)
		}
		for k := range ents {
			if IsConfigEntry(ents[k].Data) {
				m, err := DecodeMembership(ents[k].Data)
				if err != nil {
					return fmt.Errorf("raft: boot: entry %d: %w", ents[k].Index, err)
				}
				n.confs = append(n.confs, confAt{index: ents[k].Index, cfg: m.tracker()})
			}
		}
		lo += uint64(len(ents))
	}
	n.trk.Config = n.confs.last().cfg
	return nil
}
