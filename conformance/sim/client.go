package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kv/kvtest"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// The simulated clients behave as impl/client does: a client registers a
// kv session, numbers its writes, keeps up to Pipeline of them in flight,
// and retries each under its sequence number across timeouts, refusals and
// leader changes (following the leader a refusal names) until it has an
// answer, the session expires, or the operation's deadline passes (its
// outcome is then unknown if an attempt may have reached a log). A client
// without a session (SessionlessClients) retries only refusals that say
// the write was not appended: a lost answer makes its outcome unknown at
// once. Reads are linearizable reads, retried until answered or the
// deadline; one that never returns changed nothing and is left out of the
// history. Client traffic crosses the simulated network (delays; drops in
// the fault phase).

type client struct {
	s         *Sim
	id        int
	noSession bool
	// session is the live session's id (0: none); next is its next
	// sequence number; inflight its sequence numbers in flight, increasing.
	session     uint64
	next        uint64
	inflight    []uint64
	registering bool
	slots       []*clientOp
	// target is the node the client sends to (it follows leader hints).
	target       raft.NodeID
	lastUse      time.Duration
	stalledUntil time.Duration
	ops          int
	// unknowns are the client's writes whose outcome is unknown and whose
	// latest possible effect is not bounded yet (history indexes).
	unknowns []unknownWrite
}

// unknownWrite is a write of a session whose outcome is unknown: it can
// take effect only until the store refuses it, which the client learns
// when its session expires, or when a later request whose lowest
// unacknowledged number is above the write's seq is executed (the store
// then refuses the write as stale). Its Return in the history is that
// moment, or the end of the history if it never comes.
type unknownWrite struct {
	session, seq uint64
	index        int
}

// clientOp is one operation of a client, with its attempts.
type clientOp struct {
	c    *client
	slot int
	in   Input
	// session and seq: the request's identity (0 for reads, registrations
	// and writes without a session).
	session, seq uint64
	register     bool
	call         time.Duration
	attempt      int
	// minLowest is the smallest lowest-unacknowledged number any attempt
	// carried (0: none yet).
	minLowest uint64
	// maybe: an attempt may have reached a log (it got no answer in time,
	// or the network duplicated it), as impl/client's maybe: a write that
	// gives up is then unknown. It never goes back to false: a refusal
	// answers one delivery, not the others.
	maybe bool
	done  bool
	req   *kvtest.Request
}

func (s *Sim) startClients() {
	o := s.opts
	for k := 0; k < o.Clients; k++ {
		c := &client{s: s, id: k, noSession: k < o.SessionlessClients, slots: make([]*clientOp, max(o.Pipeline, 1)),
			target: raft.NodeID(1 + s.rng.IntN(len(s.Nodes)))}
		s.clients = append(s.clients, c)
		if !c.noSession {
			c.register()
		}
		s.at(s.randDur(0, o.SessionTimeout/3), c.keepAliveLoop)
	}
}

// busy reports whether the client can take no operation now.
func (c *client) freeSlot() int {
	if c.s.now < c.stalledUntil || (!c.noSession && c.session == 0) {
		return -1
	}
	for k, o := range c.slots {
		if o == nil {
			return k
		}
	}
	return -1
}

// idle: no operation in flight and no registration.
func (c *client) idle() bool {
	if c.registering {
		return false
	}
	for _, o := range c.slots {
		if o != nil {
			return false
		}
	}
	return true
}

// start begins an operation in a free slot; false if the client is busy.
func (c *client) start(in Input) bool {
	slot := c.freeSlot()
	if slot < 0 {
		return false
	}
	s := c.s
	o := &clientOp{c: c, slot: slot, in: in, call: s.now}
	c.slots[slot] = o
	c.ops++
	c.lastUse = s.now
	if in.Kind != OpGet && !c.noSession {
		o.session, o.seq = c.session, c.next
		c.next++
		c.inflight = append(c.inflight, o.seq)
		o.req = &kvtest.Request{Session: o.session, Seq: o.seq}
		s.requests = append(s.requests, o.req)
	}
	if s.opts.StallChance > 0 && s.chance(s.opts.StallChance) {
		// A pause (a GC, a stopped process): no new operation and no
		// keep-alive for longer than the session's timeout.
		c.stalledUntil = s.now + s.randDur(s.opts.SessionTimeout, s.opts.SessionTimeout+time.Second)
		s.Counts.ClientStalls++
	}
	s.at(s.opts.OpTimeout, func() { c.deadline(o) })
	c.send(o)
	return true
}

// register opens a session (a register is at-least-once: a retried one may
// open a second session, which expires unused).
func (c *client) register() {
	if c.registering {
		return
	}
	c.registering = true
	o := &clientOp{c: c, register: true, call: c.s.now, slot: -1}
	c.send(o)
}

// lowest is the lowest unacknowledged sequence number.
func (c *client) lowest() uint64 {
	if len(c.inflight) > 0 {
		return c.inflight[0]
	}
	return c.next
}

func (o *clientOp) command() kv.Command {
	if o.register {
		return kv.Register(uint64(o.c.s.opts.SessionTimeout / time.Millisecond))
	}
	in := o.in
	var cmd kv.Command
	switch in.Kind {
	case OpPut:
		cmd = kv.Put([]byte(in.Key), []byte(in.Value))
	case OpDelete:
		cmd = kv.Delete([]byte(in.Key))
	case OpCAS:
		cmd = kv.CASValue([]byte(in.Key), []byte(in.Expected), []byte(in.Value))
	case OpCASRev:
		cmd = kv.CASRevision([]byte(in.Key), in.ExpectedRev, []byte(in.Value))
	}
	if o.session != 0 {
		// A request of a session the client has given up (it expired)
		// carries its own sequence number as the lowest unacknowledged one:
		// the new session's numbers are no business of the old one's.
		lowest := o.seq
		if o.session == o.c.session {
			lowest = o.c.lowest()
		}
		if o.minLowest == 0 || lowest < o.minLowest {
			o.minLowest = lowest
		}
		cmd = cmd.InSession(o.session, o.seq, lowest)
	}
	return cmd
}

// send makes one attempt: the request crosses the network to the client's
// target, and the attempt times out if no answer is back in time.
func (c *client) send(o *clientOp) {
	s := c.s
	o.attempt++
	a := o.attempt
	to := c.target
	n := s.Node(to)
	if o.in.Kind == OpGet && !o.register {
		s.clientNet(func() {
			n.serveRead(o.in.Key, func(ans readAnswer) { s.clientNet(func() { c.readAnswered(o, a, ans) }) })
		})
	} else {
		cmd := o.command()
		if s.clientNet(func() {
			n.serveWrite(cmd, func(ans writeAnswer) { s.clientNet(func() { c.writeAnswered(o, a, ans) }) })
		}) {
			o.maybe = true
			if c.noSession && !o.register {
				// A write without a session is at-least-once: the duplicate
				// may execute too, as another write of the same input that
				// nobody sees answered.
				s.Counts.DupNoSession++
				s.history = append(s.history, HistoryOp{Client: c.id, Lane: c.lane(o), Input: o.in, Output: Output{Unknown: true}, Call: o.call, Return: -1})
			}
		}
	}
	s.at(s.opts.AttemptTimeout, func() {
		if !o.done && o.attempt == a {
			c.timedOut(o)
		}
	})
}

// clientNet carries a client message: a small delay, and in the fault
// phase a drop now and then, or a duplicate delivered up to 100 ms later
// (a delayed duplicate of a request is what a session's lowest
// unacknowledged number is for). It reports whether it duplicated.
func (s *Sim) clientNet(f func()) bool {
	if s.opts.Faults.Drops && !s.healing && s.chance(s.opts.Rates.Drop) {
		s.Counts.ClientDrops++
		return false
	}
	dup := s.opts.Faults.Dups && !s.healing && s.chance(s.opts.Rates.Dup)
	if dup {
		s.Counts.ClientDups++
		s.at(s.randDur(time.Millisecond, 100*time.Millisecond), f)
	}
	s.at(s.randDur(20*time.Microsecond, 500*time.Microsecond), f)
	return dup
}

// timedOut: the attempt got no answer in time. The client moves to another
// node; a write without a session whose attempt may have reached a log
// ends unknown.
func (c *client) timedOut(o *clientOp) {
	c.s.Counts.ClientTimeouts++
	o.maybe = true
	c.s.logf("c%d: %v attempt %d at n%d timed out", c.id, o.in, o.attempt, c.target)
	c.target = raft.NodeID(1 + c.s.rng.IntN(len(c.s.Nodes)))
	if c.noSession && !o.register && o.in.Kind != OpGet {
		c.s.Counts.UnknownNoSession++
		c.finishUnknown(o, -1)
		return
	}
	c.s.Counts.ClientRetries++
	c.send(o)
}

// retryLater retries after a refusal, towards the leader it names.
func (c *client) retryLater(o *clientOp, lead raft.NodeID) {
	s := c.s
	if lead != raft.None {
		c.target = lead
	} else {
		c.target = raft.NodeID(1 + s.rng.IntN(len(s.Nodes)))
	}
	a := o.attempt
	s.Counts.ClientRetries++
	s.logf("c%d: %v attempt %d refused; retry at n%d", c.id, o.in, a, c.target)
	s.at(s.randDur(2*time.Millisecond, 20*time.Millisecond), func() {
		if !o.done && o.attempt == a {
			c.send(o)
		}
	})
}

// writeAnswered takes the answer of attempt a of a write.
func (c *client) writeAnswered(o *clientOp, a int, ans writeAnswer) {
	s := c.s
	if ans.err != nil {
		if !o.done && a == o.attempt {
			if replica.Definite(ans.err) || !c.noSession {
				c.retryLater(o, ans.lead)
			} else {
				s.Counts.UnknownNoSession++
				c.finishUnknown(o, -1)
			}
		}
		return
	}
	res, err := kv.DecodeResult(ans.result)
	if err != nil {
		s.violation("Client: an answer does not decode: %v", err)
		return
	}
	if o.req != nil {
		o.req.Answers = append(o.req.Answers, ans.result)
	}
	if o.done {
		return
	}
	if o.register {
		c.registered(o, res)
		return
	}
	switch {
	case res.Code.Executed():
		c.finish(o, Output{Code: res.Code, Rev: res.Revision}, ans.result)
	case res.Code == kv.CodeSessionExpired:
		s.Counts.SessionExpired++
		c.expired(o.session)
		if o.maybe {
			s.Counts.UnknownExpired++
			c.finishUnknown(o, s.now)
		} else {
			c.end(o) // no attempt can have been applied: it never happened
		}
	case res.Code == kv.CodeWindowFull:
		c.retryLater(o, raft.None)
	default:
		s.violation("Client: c%d's request session=%d seq=%d (%v) answered %v", c.id, o.session, o.seq, o.in, res)
	}
}

// registered: the session is open (or a retried register answered late).
func (c *client) registered(o *clientOp, res kv.Result) {
	o.done = true
	c.registering = false
	if res.Code != kv.CodeOK {
		c.s.at(c.s.randDur(5*time.Millisecond, 50*time.Millisecond), c.register)
		return
	}
	c.session, c.next, c.inflight = res.Index, 1, nil
	c.lastUse = c.s.now
	c.s.Counts.Sessions++
}

// readAnswered takes the answer of attempt a of a read.
func (c *client) readAnswered(o *clientOp, a int, ans readAnswer) {
	if o.done {
		return
	}
	if ans.err != nil {
		c.s.logf("c%d: read refused: %v", c.id, ans.err)
		if a == o.attempt {
			c.retryLater(o, ans.lead)
		}
		return
	}
	out := Output{Code: kv.CodeOK, Found: ans.found, Value: ans.value, Rev: ans.revision}
	if !ans.found {
		out.Code = kv.CodeNotFound
	}
	c.finish(o, out, nil)
}

// deadline: the operation's time is up. A write that may have reached a
// log is unknown; anything else never happened. In the healing phase
// nothing gives up: every operation must be answered (liveness).
func (c *client) deadline(o *clientOp) {
	if o.done {
		return
	}
	if c.s.healing {
		c.s.at(c.s.opts.OpTimeout, func() { c.deadline(o) })
		return
	}
	c.s.Counts.ClientDeadlines++
	if o.in.Kind != OpGet && o.maybe {
		c.s.Counts.UnknownDeadline++
		c.finishUnknown(o, -1)
		return
	}
	c.end(o)
}

// expired: the store says session id is gone. Nothing of it executes any
// more: its unknown writes are bounded now; the client registers anew.
func (c *client) expired(id uint64) {
	c.bound(func(u unknownWrite) bool { return u.session == id })
	if c.session == id {
		c.session = 0
		c.register()
	}
}

// bound ends the unknown writes done says are over at the present moment.
func (c *client) bound(done func(unknownWrite) bool) {
	kept := c.unknowns[:0]
	for _, u := range c.unknowns {
		if done(u) {
			c.s.history[u.index].Return = c.s.now
		} else {
			kept = append(kept, u)
		}
	}
	c.unknowns = kept
}

// finishUnknown ends a write whose outcome is unknown; ret is the latest
// moment it can take effect (-1: not known yet).
func (c *client) finishUnknown(o *clientOp, ret time.Duration) {
	s := c.s
	s.Counts.Unknown++
	if ret < 0 && o.session != 0 {
		c.unknowns = append(c.unknowns, unknownWrite{session: o.session, seq: o.seq, index: len(s.history)})
	}
	s.history = append(s.history, HistoryOp{Client: c.id, Lane: c.lane(o), Session: o.session, Seq: o.seq, Input: o.in,
		Output: Output{Unknown: true}, Call: o.call, Return: ret})
	c.end(o)
}

func (c *client) finish(o *clientOp, out Output, answer []byte) {
	s := c.s
	if o.in.Kind == OpGet {
		s.Counts.ClientReads++
	} else {
		s.Counts.ClientWrites++
	}
	s.history = append(s.history, HistoryOp{Client: c.id, Lane: c.lane(o), Session: o.session, Seq: o.seq, Input: o.in,
		Output: out, Call: o.call, Return: s.now, answer: answer})
	if o.session != 0 && out.Code.Executed() {
		// Executed, so committed: every attempt of it carried a lowest
		// unacknowledged number of at least minLowest, and the store now
		// refuses the session's requests below it.
		c.bound(func(u unknownWrite) bool { return u.session == o.session && u.seq < o.minLowest })
	}
	s.logf("c%d: %v seq=%d -> %v after %v (%d attempts)", c.id, o.in, o.seq, out, s.now-o.call, o.attempt)
	s.learn(o.in, out)
	c.end(o)
}

// end frees the operation's slot and acknowledges its sequence number.
func (c *client) end(o *clientOp) {
	o.done = true
	c.slots[o.slot] = nil
	c.lastUse = c.s.now
	if o.seq == 0 || o.session != c.session {
		return
	}
	for k, seq := range c.inflight {
		if seq == o.seq {
			c.inflight = append(c.inflight[:k], c.inflight[k+1:]...)
			break
		}
	}
}

func (c *client) lane(o *clientOp) int { return c.id*len(c.slots) + o.slot }

// keepAliveLoop: an idle client with a session sends a keep-alive every
// third of the session's timeout (one attempt; a lost one is harmless).
func (c *client) keepAliveLoop() {
	s := c.s
	if s.healing {
		return
	}
	every := s.opts.SessionTimeout / 3
	if c.session != 0 && s.now >= c.stalledUntil && s.now-c.lastUse >= every {
		cmd := kv.KeepAlive(c.session, c.lowest())
		id, n := c.session, s.Node(c.target)
		s.clientNet(func() {
			n.serveWrite(cmd, func(ans writeAnswer) {
				if ans.err != nil {
					return
				}
				if res, err := kv.DecodeResult(ans.result); err == nil && res.Code == kv.CodeSessionExpired {
					c.expired(id)
				}
			})
		})
		s.Counts.KeepAlives++
	}
	s.at(every, c.keepAliveLoop)
}

// Input is one client operation of the history.
type Input struct {
	Kind        OpKind `json:"kind"`
	Key         string `json:"key"`
	Value       string `json:"value,omitempty"`
	Expected    string `json:"expected,omitempty"`
	ExpectedRev uint64 `json:"expected_rev,omitempty"`
}

// Output is its outcome: the store's code (a read: ok or not-found) and
// revision, the value read; Unknown when no answer came for a write that
// may have been applied.
type Output struct {
	Code    kv.Code `json:"code,omitempty"`
	Found   bool    `json:"found,omitempty"`
	Value   string  `json:"value,omitempty"`
	Rev     uint64  `json:"rev,omitempty"`
	Unknown bool    `json:"unknown,omitempty"`
}

// OpKind is the kind of a client operation.
type OpKind uint8

// The operations of the workload.
const (
	OpGet OpKind = iota + 1
	OpPut
	OpDelete
	OpCAS    // compare-and-swap on value
	OpCASRev // compare-and-swap on revision (0: create if absent)
)

var opKindNames = [...]string{OpGet: "get", OpPut: "put", OpDelete: "delete", OpCAS: "cas", OpCASRev: "cas-rev"}

func (k OpKind) String() string {
	if int(k) < len(opKindNames) && opKindNames[k] != "" {
		return opKindNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", k)
}

// MarshalText writes the kind's name (the history file).
func (k OpKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name.
func (k *OpKind) UnmarshalText(b []byte) error {
	for i, n := range opKindNames {
		if n != "" && n == string(b) {
			*k = OpKind(i)
			return nil
		}
	}
	return errors.New("sim: unknown operation kind " + string(b))
}

func (in Input) String() string {
	switch in.Kind {
	case OpGet, OpDelete:
		return fmt.Sprintf("%v(%s)", in.Kind, in.Key)
	case OpCAS:
		return fmt.Sprintf("cas(%s, %s→%s)", in.Key, in.Expected, in.Value)
	case OpCASRev:
		return fmt.Sprintf("cas-rev(%s, @%d→%s)", in.Key, in.ExpectedRev, in.Value)
	}
	return fmt.Sprintf("put(%s, %s)", in.Key, in.Value)
}
