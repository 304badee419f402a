package spec

import "github.com/durableraft/durableraft/trace"

// The repair from peers in impl traces (docs/repair.md, "Traces").
//
// A repair answer of the spec (HandleRepairRequest) carries the peer's
// whole durable log; the core's MsgRepairResp carries its tip and a range
// of it, and the requester is never told the rest. An impl trace's
// HandleRepairResponse event therefore logs the answer by its tip
// (mlastLogTerm, mlastLogIndex, no mprefix), and the checker takes every
// answer of the bag from that peer, of that term, with that tip: by Log
// Matching there is at most one such log among the peers' durable logs of
// a run, and the logged post-state decides among the rest.

// repairTipOnly reports whether a logged message is a repair answer logged
// by its tip.
func repairTipOnly(t *trace.Message) bool {
	return t != nil && t.Mtype == "RepairResponse" && t.Mprefix == nil && t.MlastLogIndex > 0
}

// repairAnswers is the positions in bag of the repair answers that match a
// message logged by its tip (msg: its type, term, source, destination, and
// the tip in MlastLogTerm, MlastLogIndex).
func repairAnswers(bag []BagEntryOf[uint64, RunLog], msg *traceMessage) []int {
	var out []int
	for k := range bag {
		b := &bag[k].M
		if b.Mtype == RepairResponse && b.Mterm == msg.Mterm && b.Msource == msg.Msource && b.Mdest == msg.Mdest &&
			uint64(b.Mentries.Len()) == msg.MlastLogIndex && b.Mentries.LastTerm() == msg.MlastLogTerm {
			out = append(out, k)
		}
	}
	return out
}
