package raft

import (
	"fmt"
	"slices"
)

// Validate checks every field of a message from the network before the node
// uses any: the sender is another node (one of voters, when voters is not
// nil; the core passes nil: with membership changes a message may come
// from a learner, or from a voter the receiver's log does not know yet, as
// in the spec) and the recipient is self; terms
// and indexes are within TermMax and IndexMax (so a peer-supplied 2^64-1
// is refused, never wrapped or looped over); the fields a type does not
// carry are zero (strict on the wire: one flipped bit does not pass as
// another message); an AppendEntries' entries are contiguous from
// PrevLogIndex+1, of terms within [PrevLogTerm, Term], no more than
// WireEntriesMax and WireBytesMax (the protocol's hard bounds, not the
// receiver's Config: a peer's send limits may differ); its commit index
// does not exceed its last entry. What depends on the local log (a match
// index beyond the leader's log, a hint beyond it) is checked, or clamped
// to the local frontier, by the handlers.
func Validate(m *Message, self NodeID, voters []NodeID) error {
	if err := validate(m, self, voters); err != nil {
		return fmt.Errorf("%w: %v: %v", ErrInvalidMessage, err, m.Type)
	}
	return nil
}

func validate(m *Message, self NodeID, voters []NodeID) error {
	switch {
	case m.Type < MsgVote || m.Type >= msgTypeEnd:
		return fmt.Errorf("unknown type %d", uint8(m.Type))
	case m.To != self:
		return fmt.Errorf("addressed to %d, not %d", m.To, self)
	case m.From == self || m.From == None || (voters != nil && !slices.Contains(voters, m.From)):
		return fmt.Errorf("from %d: not another voter", m.From)
	case m.Term < 1 || m.Term > TermMax:
		return fmt.Errorf("term %d out of range", m.Term)
	}
	// The fields each type carries; every other must be zero.
	var vote, resp, app, appResp, snap bool
	switch m.Type {
	case MsgRepair, MsgRepairResp:
		if err := validateRepair(m); err != nil {
			return err
		}
		return nil
	case MsgVote, MsgPreVote:
		vote = true
		if m.LastLogIndex > IndexMax || m.LastLogTerm > m.Term {
			return fmt.Errorf("last log %d/%d beyond term %d or the index range", m.LastLogTerm, m.LastLogIndex, m.Term)
		}
		if m.LastLogIndex == 0 && m.LastLogTerm != 0 {
			return fmt.Errorf("last log term %d at index 0", m.LastLogTerm)
		}
		if m.Type == MsgPreVote && m.Transfer {
			return fmt.Errorf("a pre-vote marked as transfer")
		}
	case MsgVoteResp, MsgPreVoteResp:
		resp = true
		if m.Ambiguous && !m.Granted {
			return fmt.Errorf("a refusal marked ambiguous")
		}
	case MsgFirstBoot, MsgFirstBootResp:
		resp = m.Type == MsgFirstBootResp
		if m.Seq == 0 {
			return fmt.Errorf("first boot: incarnation 0")
		}
		return validateFirstBoot(m)
	case MsgApp:
		app = true
		if err := validateApp(m); err != nil {
			return err
		}
	case MsgAppResp, MsgAppRespPassive:
		appResp = true
		if err := validateAppResp(m); err != nil {
			return err
		}
	case MsgSnap:
		snap = true
		if m.PrevLogIndex < 1 || m.PrevLogIndex > IndexMax || m.PrevLogTerm < 1 || m.PrevLogTerm > m.Term ||
			m.LeaderCommit < m.PrevLogIndex || m.LeaderCommit > IndexMax {
			return fmt.Errorf("snapshot %d/%d, leader commit %d at term %d", m.PrevLogTerm, m.PrevLogIndex, m.LeaderCommit, m.Term)
		}
	}
	if !vote && (m.LastLogIndex != 0 || m.LastLogTerm != 0 || m.Transfer) {
		return fmt.Errorf("vote fields set")
	}
	if !resp && (m.Granted || m.Ambiguous) {
		return fmt.Errorf("granted or ambiguous set")
	}
	if !app && !snap && (m.PrevLogIndex != 0 || m.PrevLogTerm != 0 || m.LeaderCommit != 0) {
		return fmt.Errorf("append fields set")
	}
	if snap && len(m.Entries) == 1 && m.Commit == 0 {
		// The snapshot's configuration (StepSnapshot): the driver's local
		// message, never on the wire.
		if e := m.Entries[0]; e.Index != m.PrevLogIndex || e.Term != m.PrevLogTerm {
			return fmt.Errorf("snapshot configuration at %d/%d, snapshot %d/%d", e.Term, e.Index, m.PrevLogTerm, m.PrevLogIndex)
		}
		if _, err := DecodeMembership(m.Entries[0].Data); err != nil {
			return err
		}
	} else if !app && (len(m.Entries) != 0 || m.Commit != 0) {
		return fmt.Errorf("append fields set")
	}
	if !appResp && (m.Success || m.MatchIndex != 0 || m.HintIndex != 0 || m.HintTerm != 0) {
		return fmt.Errorf("append response fields set")
	}
	if !app && !appResp && (m.Round != 0 || m.Seq != 0) {
		return fmt.Errorf("round or seq set")
	}
	return nil
}

// validateRepair checks a MsgRepair or MsgRepairResp (repair.go): a tip
// within the term, a request's probe alone of the append fields, an
// answer's entries as an AppendEntries' (validateApp).
func validateRepair(m *Message) error {
	switch {
	case m.LastLogIndex > IndexMax || m.LastLogTerm > m.Term || (m.LastLogIndex == 0) != (m.LastLogTerm == 0):
		return fmt.Errorf("tip %d/%d beyond term %d or the index range", m.LastLogTerm, m.LastLogIndex, m.Term)
	case m.Transfer || m.Granted || m.Ambiguous || m.Commit != 0 || m.LeaderCommit != 0 || m.Round != 0 || m.Seq != 0 ||
		m.Success || m.MatchIndex != 0 || m.HintIndex != 0 || m.HintTerm != 0:
		return fmt.Errorf("fields of another message type set")
	case m.Type == MsgRepair && (m.PrevLogIndex > IndexMax || m.PrevLogTerm != 0 || len(m.Entries) != 0):
		return fmt.Errorf("a repair request with entries, or a probe out of range")
	case m.Type == MsgRepairResp && m.PrevLogIndex+uint64(len(m.Entries)) > m.LastLogIndex:
		return fmt.Errorf("entries beyond the answer's tip %d", m.LastLogIndex)
	}
	if m.Type == MsgRepairResp {
		return validateApp(m)
	}
	return nil
}

// validateFirstBoot: Seq (the asker's incarnation), Round (the answerer's)
// and Granted (the answer's) only.
func validateFirstBoot(m *Message) error {
	if m.LastLogIndex != 0 || m.LastLogTerm != 0 || m.Transfer || m.PrevLogIndex != 0 || m.PrevLogTerm != 0 || m.LeaderCommit != 0 ||
		len(m.Entries) != 0 || m.Commit != 0 || m.Success || m.MatchIndex != 0 || m.HintIndex != 0 || m.HintTerm != 0 ||
		m.Ambiguous || (m.Type == MsgFirstBoot && (m.Granted || m.Round != 0)) {
		return fmt.Errorf("fields set that a first boot's messages do not carry")
	}
	return nil
}

func validateApp(m *Message) error {
	if m.PrevLogIndex > IndexMax || m.PrevLogTerm > m.Term || (m.PrevLogIndex == 0) != (m.PrevLogTerm == 0) {
		return fmt.Errorf("prev %d/%d at term %d", m.PrevLogTerm, m.PrevLogIndex, m.Term)
	}
	if len(m.Entries) > WireEntriesMax {
		return fmt.Errorf("%d entries, at most %d", len(m.Entries), WireEntriesMax)
	}
	last := m.PrevLogIndex + uint64(len(m.Entries))
	if last > IndexMax {
		return fmt.Errorf("entries beyond the index range")
	}
	var size uint64
	term := max(m.PrevLogTerm, 1)
	for k, e := range m.Entries {
		if e.Index != m.PrevLogIndex+1+uint64(k) {
			return fmt.Errorf("entry %d has index %d after prev %d", k, e.Index, m.PrevLogIndex)
		}
		if e.Term < term || e.Term > m.Term {
			return fmt.Errorf("entry %d has term %d, want [%d, %d]", e.Index, e.Term, term, m.Term)
		}
		term = e.Term
		if IsConfigEntry(e.Data) {
			if _, err := DecodeMembership(e.Data); err != nil {
				return fmt.Errorf("entry %d: %w", e.Index, err)
			}
		}
		if size += uint64(len(e.Data)); size > WireBytesMax {
			return fmt.Errorf("more than %d bytes of entries", WireBytesMax)
		}
	}
	if m.Commit > last || m.Commit > m.LeaderCommit || m.LeaderCommit > IndexMax {
		return fmt.Errorf("commit %d, leader commit %d, last entry %d", m.Commit, m.LeaderCommit, last)
	}
	return nil
}

func validateAppResp(m *Message) error {
	switch {
	case m.MatchIndex > IndexMax || m.HintIndex > IndexMax || m.HintTerm > m.Term:
		return fmt.Errorf("match %d hint %d/%d out of range", m.MatchIndex, m.HintTerm, m.HintIndex)
	case m.Success && (m.HintIndex != 0 || m.HintTerm != 0):
		return fmt.Errorf("a success with a hint")
	case !m.Success && m.MatchIndex != 0:
		return fmt.Errorf("a rejection with match %d", m.MatchIndex)
	case m.HintIndex == 0 && m.HintTerm != 0:
		return fmt.Errorf("hint term %d at index 0", m.HintTerm)
	}
	return nil
}
