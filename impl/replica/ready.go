package replica

import (
	"encoding/binary"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
)

// processReadies carries out every Ready the core has. A Ready with nothing
// in it ends the loop: the core still has work it could not hand out (its
// read of committed entries failed, and said so in an alert); it tries
// again after the next input instead of spinning here.
func (r *Replica) processReadies() {
	defer r.maybeSnapshot()
	for r.node.HasReady() {
		rd := r.node.Ready()
		r.processReady(rd)
		if readyEmpty(&rd) {
			r.stats.ReadiesEmpty.Add(1)
			return
		}
	}
}

func readyEmpty(rd *raft.Ready) bool {
	return !rd.HardStateChanged && rd.TruncateFrom == 0 && len(rd.Entries) == 0 && len(rd.Messages) == 0 && rd.Snapshot == nil &&
		len(rd.MessagesAfterPersist) == 0 && len(rd.Committed) == 0 && len(rd.ReadStates) == 0 && len(rd.Alerts) == 0 && rd.FirstBoot == nil
}

// processReady carries out one Ready, in the order the contract needs
// (Replica's doc): submit the hard state and hold; truncate; append the
// entries (the leader's encoded here, a follower's as the verified records
// it received); hold for the truncation's sync; send the messages, stamped
// with the WAL's records; send or stash the MessagesAfterPersist; apply;
// answer reads; report alerts.
func (r *Replica) processReady(rd raft.Ready) {
	if rd.FirstBoot != nil {
		if err := r.cfg.OnFirstBoot(*rd.FirstBoot); err != nil {
			r.walError("first boot record", err)
		}
	}
	switch {
	case rd.HardStateChanged:
		r.term = rd.HardState.Term
		r.submitHardState(rd.HardState)
	case r.bugs&BugLearnedCommitHardState != 0 && rd.LearnedCommit != r.hsWritten.LearnedCommit:
		hs := r.hsWritten
		hs.LearnedCommit = rd.LearnedCommit
		r.submitHardState(hs)
	}
	if rd.MembershipChanged {
		r.noteMembership()
	}
	if rd.Snapshot != nil {
		if r.failErr == nil {
			r.installSnapshot(*rd.Snapshot)
		} else {
			r.stepLost = true // the core installed a snapshot the runtime can no longer carry out
		}
	}
	if rd.TruncateFrom > 0 {
		r.loseProposalsFrom(rd.TruncateFrom)
		if err := r.w.TruncateSuffix(rd.TruncateFrom); err != nil {
			r.walError("truncate", err)
			r.stepLost = true
		}
	}
	if len(rd.Entries) > 0 {
		r.appendEntries(rd.Entries)
	}
	if rd.TruncateFrom > 0 && r.failErr == nil && r.cfg.Raft.TestingBugs&raft.BugTruncationNotSynced == 0 {
		r.hold(r.w.SubmitSync())
		r.stats.TruncationSyncs.Add(1)
	}
	r.sendStamped(rd.Messages)
	if len(rd.MessagesAfterPersist) > 0 {
		after := r.wrap(rd.MessagesAfterPersist)
		switch {
		case r.failErr != nil:
			r.stats.MessagesDropped.Add(uint64(len(after)))
		case r.holdTicket != 0 && r.bugs&BugSendBeforePersist == 0:
			r.stash = append(r.stash, after...)
		default:
			r.send(after)
		}
	}
	for _, e := range rd.Committed {
		r.apply(e)
	}
	for _, rs := range rd.ReadStates {
		r.readState(rs)
	}
	r.serveReads()
	for _, a := range rd.Alerts {
		r.stats.Alerts.Add(1)
		r.log.Warn("replica: ALERT "+a.Kind.String(), "text", a.Text)
	}
	r.noteFence(rd.Alerts)
	r.noteRole(rd.Role, rd.Lead)
}

// submitHardState hands the WAL a hard state and holds inputs until it is
// durable (rule 1). The learned commit travels with it (HardState's
// LearnedCommit, the WAL's Commit) but is not a reason to write one: a
// change of it alone is no Ready.HardStateChanged, so a follower's round
// costs no hard-state fdatasync and its heartbeats and read rounds never
// wait for one (issue 10 item 1; the spec's production rule: a restart may
// bring back any lower value). BugLearnedCommitHardState writes every
// change, the rule before.
func (r *Replica) submitHardState(hs raft.HardState) {
	if _, err := r.w.SubmitHardState(hardStateToWAL(hs)); err != nil {
		r.walError("hard state", err)
		r.stepLost = true
		return
	}
	r.hsWritten = hs
	// SubmitSync covers the hard state and asks the WAL to skip its
	// group-commit delay: a vote must not wait out --wal-sync-ms (with a
	// delay above the election timeout no leader would ever be elected).
	r.hold(r.w.SubmitSync())
}

// appendEntries writes the Ready's entries to the WAL: a follower's as the
// records it received and verified (byte for byte, chain checked again by
// the WAL), the leader's encoded by the WAL. Proposals learn their term.
func (r *Replica) appendEntries(ents []raft.Entry) {
	recs := make([]wal.Record, 0, len(ents))
	for _, e := range ents {
		rec, ok := r.ingress[e.Index]
		if !ok {
			recs = nil
			break
		}
		recs = append(recs, rec)
	}
	var err error
	if recs != nil {
		err = r.w.AppendRecords(recs)
		r.stats.RecordsAppendedShipped.Add(uint64(len(recs)))
	} else {
		err = r.w.Append(walEntries(ents))
	}
	if err != nil {
		r.walError("append", err)
		return
	}
	for k := len(r.proposals) - 1; k >= 0 && r.proposals[k].term == 0; k-- {
		p := &r.proposals[k]
		if i := p.index; i >= ents[0].Index && i <= ents[len(ents)-1].Index {
			p.term = ents[i-ents[0].Index].Term
		}
	}
	r.timeAppended(ents[0].Index, ents[len(ents)-1].Index)
}

// wrap turns core messages into replica messages (no records: only an
// AppendEntries carries them, and the core puts those in Messages).
func (r *Replica) wrap(ms []raft.Message) []Message {
	out := make([]Message, len(ms))
	for k := range ms {
		out[k] = Message{Message: ms[k]}
	}
	return out
}

// sendStamped sends messages that may leave at once, AppendEntries with
// their WAL records. A message whose records cannot be read is dropped (the
// WAL failed, or read back damage: the WAL fails then too).
func (r *Replica) sendStamped(ms []raft.Message) {
	if len(ms) == 0 || r.failErr != nil {
		r.stats.MessagesDropped.Add(uint64(len(ms)))
		return
	}
	out := make([]Message, 0, len(ms))
	var last stamped
	for k := range ms {
		if ms[k].Type == raft.MsgSnap {
			r.startSend(&ms[k]) // streamed by the runtime, chunk by chunk
			continue
		}
		m, err := r.stamp(&ms[k], &last)
		if err != nil {
			r.stats.MessagesDropped.Add(1)
			r.alert.log(r.log, "stamp", "replica: cannot read the records of an outgoing AppendEntries; dropped", "to", uint64(ms[k].To), "err", err)
			continue
		}
		out = append(out, m)
	}
	r.send(out)
}

func (r *Replica) send(ms []Message) {
	if len(ms) == 0 {
		return
	}
	r.stats.MessagesSent.Add(uint64(len(ms)))
	for k := range ms {
		if ms[k].Type == raft.MsgVoteResp && ms[k].Granted {
			r.stats.VotesGranted.Add(1)
		}
	}
	r.tr.Send(ms)
}

// apply hands a committed entry to the state machine and answers its
// proposer: with the result when the entry applied is the one proposed,
// ErrLost when another entry took its index.
func (r *Replica) apply(e raft.Entry) {
	if e.Index != r.applied+1 {
		panic("replica: committed entries out of order")
	}
	var start time.Time
	if r.timing() {
		start = r.cfg.Now()
	}
	val := r.sm.Apply(stateMachineEntry(e))
	if r.timing() {
		r.cfg.ObserveStage(StageApply, r.cfg.Now().Sub(start))
	}
	r.applied = e.Index
	if r.snaps != nil {
		r.snaps.noteApplied(&e)
	}
	r.stats.Applied.Store(e.Index)
	for len(r.proposals) > 0 && r.proposals[0].index <= e.Index {
		p := r.proposals[0]
		r.proposals = r.proposals[1:]
		if r.durableTimed > 0 {
			r.durableTimed--
		}
		if p.index == e.Index && p.term == e.Term {
			if r.timing() {
				r.timeCommitted(&p, start)
			}
			p.done(Result{Index: e.Index, Term: e.Term, Value: val})
		} else {
			r.stats.ProposalsLost.Add(1)
			markProposalLost.Hit()
			p.done(Result{Index: p.index, Term: p.term, Err: ErrLost})
		}
	}
}

// loseProposalsFrom answers the proposals at or after from with ErrLost:
// a later leader's entries replace them, so they never commit (if one had
// committed, Leader Completeness would put it in that leader's log).
func (r *Replica) loseProposalsFrom(from uint64) {
	k := len(r.proposals)
	for k > 0 && r.proposals[k-1].index >= from {
		k--
	}
	for _, p := range r.proposals[k:] {
		r.stats.ProposalsLost.Add(1)
		markProposalLost.Hit()
		p.done(Result{Index: p.index, Term: p.term, Err: ErrLost})
	}
	r.proposals = r.proposals[:k]
	r.durableTimed = min(r.durableTimed, k)
}

// startReadRound starts a confirmation round for every read waiting, if
// none is in flight: one round serves every read waiting when it starts.
func (r *Replica) startReadRound() {
	if r.readRound != 0 || len(r.readsWaiting) == 0 {
		return
	}
	r.readSeq++
	ctx := binary.BigEndian.AppendUint64(nil, r.readSeq)
	if err := r.node.ReadIndex(ctx); err != nil {
		err = proposeError(err)
		for _, rd := range r.readsWaiting {
			rd.Done(ReadResult{Err: err})
		}
		r.readsWaiting = nil
		return
	}
	r.stats.ReadRounds.Add(1)
	r.readRound, r.readsInFlight, r.readsWaiting = r.readSeq, r.readsWaiting, nil
}

// readState takes the answer of a round: its reads wait for the state
// machine to apply its index.
func (r *Replica) readState(rs raft.ReadState) {
	if len(rs.Context) != 8 || binary.BigEndian.Uint64(rs.Context) != r.readRound || r.readRound == 0 {
		return // a round abandoned at a leader change
	}
	r.readsReady = append(r.readsReady, readBatch{index: rs.Index, reads: r.readsInFlight})
	r.readRound, r.readsInFlight = 0, nil
	r.startReadRound()
}

// serveReads answers the confirmed reads whose index is applied.
func (r *Replica) serveReads() {
	k := 0
	for ; k < len(r.readsReady) && r.readsReady[k].index <= r.applied; k++ {
		for _, rd := range r.readsReady[k].reads {
			rd.Done(ReadResult{Index: r.readsReady[k].index, Applied: r.applied})
		}
		r.stats.Reads.Add(uint64(len(r.readsReady[k].reads)))
	}
	if k > 0 {
		r.readsReady = append(r.readsReady[:0], r.readsReady[k:]...)
	}
}

// failReads answers every read not yet confirmed with err.
func (r *Replica) failReads(err error) {
	for _, rd := range r.readsInFlight {
		rd.Done(ReadResult{Err: err})
	}
	for _, rd := range r.readsWaiting {
		rd.Done(ReadResult{Err: err})
	}
	r.readRound, r.readsInFlight, r.readsWaiting = 0, nil, nil
}

// noteRole logs a change of role or leader once, and ends the reads of a
// leadership that ended.
func (r *Replica) noteRole(role raft.Role, lead raft.NodeID) {
	if role == r.role && lead == r.lead {
		return
	}
	wasLeader := r.role == raft.RoleLeader
	if role == raft.RoleCandidate && r.role != raft.RoleCandidate {
		r.stats.Campaigns.Add(1)
	}
	r.role, r.lead = role, lead
	r.log.Info("replica: role changed", "role", role.String(), "lead", uint64(lead))
	if role == raft.RoleLeader {
		r.stats.LeaderElections.Add(1)
	}
	if wasLeader && role != raft.RoleLeader {
		if r.readRound != 0 {
			markReadsLeaderLost.Hit()
		}
		r.failReads(ErrLeaderChanged)
		r.dropSenders()
	}
}
