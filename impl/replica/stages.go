package replica

import "time"

// Stage is one leg of a write's way through a replica, for latency
// metrics (Config.ObserveStage). A leader's proposal passes them in order:
// StageAppend (from Proposal.At, or from reaching the replica, to the WAL
// taking the entry), StageLeaderSync (to the leader's own fdatasync
// covering it, or to the commit when the followers were first),
// StageMajorityDurable (to its commit: a majority has it durable),
// StageApply (the state machine's Apply). Every node, leader or
// follower, times StageApply for every entry it applies.
type Stage uint8

// Stages.
const (
	StageAppend Stage = iota
	StageLeaderSync
	StageMajorityDurable
	StageApply
	stageEnd
)

var stageNames = [...]string{
	StageAppend: "append", StageLeaderSync: "leader_fdatasync", StageMajorityDurable: "majority_durable", StageApply: "apply",
}

func (s Stage) String() string {
	if s < stageEnd {
		return stageNames[s]
	}
	return "Stage(?)"
}

// AllStages lists the stages in order.
func AllStages() []Stage {
	out := make([]Stage, 0, stageEnd)
	for s := Stage(0); s < stageEnd; s++ {
		out = append(out, s)
	}
	return out
}

// timing says whether stages are timed (Config.Now and ObserveStage set).
func (r *Replica) timing() bool { return r.cfg.Now != nil && r.cfg.ObserveStage != nil }

// timeAppended times the append stage of the proposals the WAL has just
// taken (those whose term was set by this append).
func (r *Replica) timeAppended(first, last uint64) {
	if !r.timing() {
		return
	}
	now := r.cfg.Now()
	for k := len(r.proposals) - 1; k >= 0 && r.proposals[k].index >= first; k-- {
		p := &r.proposals[k]
		if p.index <= last && p.appendedAt.IsZero() {
			p.appendedAt = now
			r.cfg.ObserveStage(StageAppend, now.Sub(p.proposedAt))
		}
	}
}

// timeDurable times the leader-fdatasync stage of the appended proposals
// the WAL's durable index now covers. proposals[:durableTimed] are timed
// already; the durable index only grows except at a truncation, which
// loses the proposals above it (loseProposalsFrom clamps durableTimed).
func (r *Replica) timeDurable(durable uint64) {
	if !r.timing() {
		return
	}
	var now time.Time
	for r.durableTimed < len(r.proposals) {
		p := &r.proposals[r.durableTimed]
		if p.appendedAt.IsZero() || p.index > durable {
			return
		}
		if now.IsZero() {
			now = r.cfg.Now()
		}
		p.durableAt = now
		r.cfg.ObserveStage(StageLeaderSync, now.Sub(p.appendedAt))
		r.durableTimed++
	}
}

// timeCommitted times the majority-durable stage of a proposal applied
// now (its commit came in the Ready being processed). The leader's own
// fdatasync runs in parallel with the followers': when two followers made
// the entry durable first, the commit came before the leader's fdatasync
// covered it, and the leader-fdatasync stage ends at the commit (the
// majority-durable stage then takes no time), so that every write is
// observed once in every stage and the stages add up to its commit.
func (r *Replica) timeCommitted(p *pendingProposal, now time.Time) {
	if p.appendedAt.IsZero() {
		return
	}
	if p.durableAt.IsZero() {
		p.durableAt = now
		r.cfg.ObserveStage(StageLeaderSync, now.Sub(p.appendedAt))
	}
	r.cfg.ObserveStage(StageMajorityDurable, now.Sub(p.durableAt))
}
