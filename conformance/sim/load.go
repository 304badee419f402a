package sim

import (
	"fmt"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/replica"
)

// startLoad starts the clients and, unless a caller drives them (Options.
// Driven), their random workload: a write every ProposeEvery and a read
// every ReadEvery (on average), each from a random client with a free
// slot, over Keys keys.
func (s *Sim) startLoad() {
	s.startClients()
	if s.opts.Driven {
		return
	}
	if s.opts.ProposeEvery > 0 {
		s.at(s.randDur(0, s.opts.ProposeEvery), s.proposeLoop)
	}
	if s.opts.ReadEvery > 0 {
		s.at(s.randDur(0, s.opts.ReadEvery), s.readLoop)
	}
}

func (s *Sim) randomClient() *client {
	if len(s.clients) == 0 {
		return nil
	}
	return s.clients[s.rng.IntN(len(s.clients))]
}

func (s *Sim) proposeLoop() {
	if s.healing {
		return
	}
	if c := s.randomClient(); c != nil {
		s.Counts.Proposals++
		if !c.start(s.randomWrite(c)) {
			s.Counts.ClientBusy++
		}
	}
	s.at(s.randDur(0, 2*s.opts.ProposeEvery), s.proposeLoop)
}

func (s *Sim) readLoop() {
	if s.healing {
		return
	}
	if c := s.randomClient(); c != nil {
		if !c.start(Input{Kind: OpGet, Key: s.randomKey()}) {
			s.Counts.ClientBusy++
		}
	}
	s.at(s.randDur(0, 2*s.opts.ReadEvery), s.readLoop)
}

func (s *Sim) randomKey() string { return fmt.Sprintf("k%d", s.rng.IntN(max(s.opts.Keys, 1))) }

// randomWrite draws a write: puts, deletes, and compare-and-swaps on value
// and on revision.
func (s *Sim) randomWrite(c *client) Input {
	kind := OpCASRev
	switch p := s.rng.IntN(100); {
	case p < 40:
		kind = OpPut
	case p < 52:
		kind = OpDelete
	case p < 80:
		kind = OpCAS
	}
	return s.makeInput(c, kind, s.randomKey(), !s.chance(0.2))
}

// makeInput builds an operation of client c. Every value written is
// unique, so a write applied twice or at the wrong time shows. A
// compare-and-swap expects what a client last saw of the key when fresh
// (so that many succeed), something older otherwise.
func (s *Sim) makeInput(c *client, kind OpKind, key string, fresh bool) Input {
	in := Input{Kind: kind, Key: key}
	seen := s.seen[key]
	switch kind {
	case OpPut:
		in.Value = fmt.Sprintf("v%d.%d", c.id, c.ops)
	case OpCAS:
		in.Value, in.Expected = fmt.Sprintf("v%d.%d", c.id, c.ops), seen.value
		if !seen.found || !fresh {
			in.Expected = fmt.Sprintf("v%d.%d", s.rng.IntN(len(s.clients)), s.rng.IntN(c.ops+1))
		}
	case OpCASRev:
		in.Value, in.ExpectedRev = fmt.Sprintf("v%d.%d", c.id, c.ops), seen.rev
		if !fresh {
			in.ExpectedRev = s.rng.Uint64N(seen.rev + 2)
		}
	}
	return in
}

// seenKey is the last state of a key any client saw (for CAS inputs).
type seenKey struct {
	found bool
	value string
	rev   uint64
}

// learn keeps what an answer says about its key.
func (s *Sim) learn(in Input, out Output) {
	switch {
	case in.Kind == OpGet:
		s.seen[in.Key] = seenKey{found: out.Found, value: out.Value, rev: out.Rev}
	case in.Kind == OpDelete:
		s.seen[in.Key] = seenKey{}
	case out.Code == kv.CodeOK:
		s.seen[in.Key] = seenKey{found: true, value: in.Value, rev: out.Rev}
	}
}

// propose hands one proposal to the node.
func (n *Node) propose(data []byte, done func(replica.Result)) {
	if n.r == nil {
		return
	}
	n.handle(replica.Event{Kind: replica.EventPropose, Proposals: []replica.Proposal{{Data: data, Done: done}}})
}

// proposeFinal proposes the entry whose acknowledgment ends a healed run:
// a kv no-op stamped with the leader's clock.
func (n *Node) proposeFinal() {
	n.s.check.finalPending = n.ID
	data, err := kv.Noop().At(n.clockMs()).Marshal()
	if err != nil {
		panic(err)
	}
	n.propose(data, n.s.check.proposalDone(n, data, true, nil))
}
