package server

import (
	"context"
	"errors"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// proposed is the answer to one proposal, with the leader the replica
// knew of when it answered (for forwarding after ErrNotLeader).
type proposed struct {
	res  replica.Result
	lead raft.NodeID
	at   time.Time // when the replica answered (the reply stage starts)
}

// stamp sets the leader's clock into c and encodes it. A command that does
// not validate is refused before it costs a log entry.
func stamp(c kv.Command) ([]byte, *Error) {
	c.TimeMs = uint64(time.Now().UnixMilli())
	data, err := c.Marshal()
	switch {
	case errors.Is(err, kv.ErrTooLarge):
		return nil, errorf(CodeTooLarge, "%v", err)
	case err != nil:
		return nil, errorf(CodeBadRequest, "%v", err)
	}
	return data, nil
}

// propose hands data to the replica; done is called exactly once, on the
// replica's goroutine, with the result and the leader known then. An error
// means it was refused before it reached the replica (definite).
func (n *Node) propose(data [][]byte, done []func(proposed)) *Error {
	if n.stopping.Load() {
		return errorf(CodeStopping, "the node is stopping")
	}
	if e := n.divergedRefusal(); e != nil {
		return e
	}
	ps := make([]replica.Proposal, len(data))
	for k := range data {
		d := done[k]
		ps[k] = replica.Proposal{Data: data[k], Done: func(r replica.Result) { d(n.proposedOf(r)) }}
	}
	return n.proposeBatch(ps)
}

// proposeBatch hands proposals to the replica as one batch (their Done
// calls answer them); an error means none was taken (definite, and no
// Done is called).
func (n *Node) proposeBatch(ps []replica.Proposal) *Error {
	if n.stopping.Load() {
		return errorf(CodeStopping, "the node is stopping")
	}
	now := time.Now() // the append stage starts (replica.Proposal.At)
	for k := range ps {
		ps[k].At = now
	}
	if err := n.run.Submit(replica.Event{Kind: replica.EventPropose, Proposals: ps}); err != nil {
		return proposeFailure(err, false)
	}
	n.lastProposeMs.Store(time.Now().UnixMilli())
	return nil
}

// proposedOf adds to a proposal's answer the leader the replica knows of
// (for forwarding after ErrNotLeader); only a failure needs it. It runs on
// the replica's goroutine.
func (n *Node) proposedOf(r replica.Result) proposed {
	p := proposed{res: r, at: time.Now()}
	if r.Err != nil {
		_, _, p.lead = n.rep.Leadership()
	}
	return p
}

// outcome turns a proposal's answer into the kv result or a client error.
func (n *Node) outcome(p proposed) (kv.Result, *Error) {
	if p.res.Err != nil {
		e := proposeFailure(p.res.Err, true)
		e.Leader = p.lead
		return kv.Result{}, e
	}
	r, err := kv.DecodeResult(p.res.Value)
	if err != nil {
		return kv.Result{}, errorf(CodeInternal, "the store's result does not decode: %v", err)
	}
	return r, resultError(r)
}

// write proposes one command and waits for its answer, the request's end
// (the outcome is then unknown), or the node's stop. answered is when the
// replica answered (zero without an answer), for the reply stage.
func (n *Node) write(ctx context.Context, c kv.Command) (res kv.Result, answered time.Time, err *Error) {
	n.stats.Writes.Add(1)
	data, e := stamp(c)
	if e != nil {
		return kv.Result{}, time.Time{}, e
	}
	ch := make(chan proposed, 1)
	if e := n.propose([][]byte{data}, []func(proposed){func(p proposed) { ch <- p }}); e != nil {
		return kv.Result{}, time.Time{}, e
	}
	select {
	case p := <-ch:
		res, err = n.outcome(p)
		return res, p.at, err
	case <-ctx.Done():
		return kv.Result{}, time.Time{}, errorf(CodeUnknown, "no answer within the request's time: the entry may be in the log (%v)", ctx.Err())
	case <-n.runDone:
		return kv.Result{}, time.Time{}, errorf(CodeUnknown, "the node stopped before the answer: the entry may be in the log")
	}
}

// readAnswer is one read's answer.
type readAnswer struct {
	value    []byte
	revision uint64
	found    bool
	err      *Error
}

// readDone returns the Done of a linearizable read of key: on success it
// reads the store right there, on the replica's goroutine, at exactly the
// applied index the confirmation waited for.
func (n *Node) readDone(key []byte, answer func(readAnswer)) func(replica.ReadResult) {
	return func(rr replica.ReadResult) {
		if rr.Err != nil {
			e := readFailure(rr.Err)
			_, _, e.Leader = n.rep.Leadership()
			answer(readAnswer{err: e})
			return
		}
		v, rev, ok, _ := n.sm.get(key)
		answer(readAnswer{value: v, revision: rev, found: ok})
	}
}

// read reads key: linearizably through a ReadIndex round (replica
// EventRead), or, with stale, from this node's store as it is.
func (n *Node) read(ctx context.Context, key []byte, stale bool) readAnswer {
	if len(key) == 0 || len(key) > kv.KeyBytesMax {
		return readAnswer{err: errorf(CodeTooLarge, "key of %d bytes: keys are 1..%d bytes", len(key), kv.KeyBytesMax)}
	}
	if e := n.divergedRefusal(); e != nil {
		return readAnswer{err: e}
	}
	if stale {
		n.stats.StaleReads.Add(1)
		v, rev, ok, _ := n.sm.get(key)
		return readAnswer{value: v, revision: rev, found: ok}
	}
	n.stats.Reads.Add(1)
	if n.stopping.Load() {
		return readAnswer{err: errorf(CodeStopping, "the node is stopping")}
	}
	ch := make(chan readAnswer, 1)
	ev := replica.Event{Kind: replica.EventRead, Reads: []replica.Read{{Done: n.readDone(key, func(a readAnswer) { ch <- a })}}}
	if err := n.run.Submit(ev); err != nil {
		return readAnswer{err: readFailure(err)}
	}
	select {
	case a := <-ch:
		return a
	case <-ctx.Done():
		return readAnswer{err: errorf(CodeBusy, "the read was not confirmed in time (%v)", ctx.Err())}
	case <-n.runDone:
		return readAnswer{err: errorf(CodeStopping, "the node stopped")}
	}
}

// divergedRefusal refuses every client request of a member whose state
// the state check found diverged (fenced from serving until restarted).
func (n *Node) divergedRefusal() *Error {
	if !n.check.diverged.Load() {
		return nil
	}
	return errorf(CodeFenced, "this node's state diverged from the majority's (state check): it serves nothing until restarted")
}

// leaderOf fills in the leader's client address of e.
func (n *Node) leaderOf(e *Error) *Error {
	if e != nil && e.Leader != raft.None && e.LeaderAddr == "" {
		e.LeaderAddr = n.tr.ClientAddr(e.Leader)
	}
	return e
}
