package sim

import (
	"bytes"
	"fmt"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kv/kvtest"
)

// The checks of the KV layer at the end of a healed run (every node up and
// caught up to the final entry):
//
//	AtMostOnce    kvtest.CheckAtMostOnce on every replica's applied log
//	              with every request the clients sent and every answer
//	              they received, and the replica's final store
//	AckedPresent  every write a client saw answered (executed) is in
//	              every replica's log at the index its answer names, as
//	              that request, answered with those bytes (durability)
//	StoreAgreement replicas at the same applied index have the same store
//	              hash
//
// Linearizability (porcupine, history.go) and the trace check run after
// these, in Check.

// clientsIdle: no client has an operation or a registration in flight.
func (s *Sim) clientsIdle() bool { return s.clientsBusy() == 0 }

func (s *Sim) clientsBusy() int {
	k := 0
	for _, c := range s.clients {
		if !c.idle() {
			k++
		}
	}
	return k
}

// caughtUp: every node is up and has applied the final entry and every
// entry any replica applied.
func (s *Sim) caughtUp() bool {
	target := s.check.finalIndex
	for _, n := range s.Nodes {
		if n.r == nil {
			return false
		}
		target = max(target, n.sm.st.AppliedIndex())
	}
	for _, n := range s.Nodes {
		if s.finalMember(n) && n.sm.st.AppliedIndex() < target {
			return false
		}
	}
	return true
}

// checkKV runs the KV layer's end checks.
func (s *Sim) checkKV() {
	var reqs []kvtest.Request
	for _, r := range s.requests {
		reqs = append(reqs, *r)
	}
	for _, n := range s.Nodes {
		if n.r == nil || !s.finalMember(n) {
			continue
		}
		rep, err := kvtest.CheckAtMostOnce(n.sm.log, reqs, n.sm.st)
		if err != nil {
			s.violation("AtMostOnce: n%d: %v", n.ID, err)
			return
		}
		s.Counts.Deduplicated = max(s.Counts.Deduplicated, rep.Deduplicated)
		if err := n.sm.st.Verify(); err != nil {
			s.violation("StoreAgreement: n%d's store fails its own verification: %v", n.ID, err)
			return
		}
		s.checkAckedPresent(n)
	}
	for _, a := range s.Nodes {
		for _, b := range s.Nodes {
			if a.ID < b.ID && a.r != nil && b.r != nil && a.sm.st.AppliedIndex() == b.sm.st.AppliedIndex() && a.sm.st.Hash() != b.sm.st.Hash() {
				s.violation("StoreAgreement: n%d and n%d at applied index %d have store hashes %016x and %016x",
					a.ID, b.ID, a.sm.st.AppliedIndex(), a.sm.st.Hash(), b.sm.st.Hash())
			}
		}
	}
}

// checkAckedPresent: AckedPresent on node n.
func (s *Sim) checkAckedPresent(n *Node) {
	log := n.sm.log
	for _, op := range s.history {
		if op.Input.Kind == OpGet || op.Output.Unknown {
			continue
		}
		res, err := kv.DecodeResult(op.answer)
		if err != nil {
			s.violation("AckedPresent: %v's answer does not decode: %v", op.Input, err)
			return
		}
		if why := presentAt(log, op, res); why != "" {
			s.violation("AckedPresent: c%d's %v (session=%d seq=%d) was answered %v, but n%d %s", op.Client, op.Input, op.Session, op.Seq, res, n.ID, why)
			return
		}
	}
}

// presentAt says why the write op answered res is not in log at res.Index
// ("" when it is).
func presentAt(log []kvtest.Applied, op HistoryOp, res kv.Result) string {
	if res.Index < 1 || res.Index > uint64(len(log)) {
		return fmt.Sprintf("has applied only %d entries", len(log))
	}
	e := log[res.Index-1]
	cmd, err := kv.DecodeCommand(e.Data)
	if err != nil {
		return fmt.Sprintf("holds an entry there that is not a command (%v)", err)
	}
	in := op.Input
	same := cmd.Session == op.Session && cmd.Seq == op.Seq && string(cmd.Key) == in.Key && string(cmd.Value) == in.Value &&
		string(cmd.ValueExpected) == in.Expected && cmd.RevisionExpected == in.ExpectedRev && cmd.Op == in.Kind.kvOp()
	if !same {
		return fmt.Sprintf("holds %v there", cmd)
	}
	if !bytes.Equal(e.Result, op.answer) {
		res, _ := kv.DecodeResult(e.Result)
		return fmt.Sprintf("answered the entry there %v", res)
	}
	return ""
}

// kvOp is the command an operation sends.
func (k OpKind) kvOp() kv.Op {
	switch k {
	case OpPut:
		return kv.OpPut
	case OpDelete:
		return kv.OpDelete
	case OpCAS:
		return kv.OpCASValue
	case OpCASRev:
		return kv.OpCASRevision
	}
	return 0
}
