package sim

import (
	"fmt"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
)

// A driven run: the caller (the rapid property of conformance/) chooses
// the client operations and the scheduled faults, and advances virtual
// time between them; the per-message and per-sync faults (drops,
// duplicates, delays, wire flips, slow syncs, late notifications) still
// strike at the rates of Options.Rates, from the seed. Finish heals the
// cluster and runs every check, as Check does for a seeded run.

// NewDriven builds and boots a cluster for a driven run: the clients are
// up, nothing else happens until the caller says so.
func NewDriven(o Options) (*Sim, error) {
	o.Driven = true
	s, err := New(o)
	if err != nil {
		return nil, err
	}
	s.startLoad()
	return s, nil
}

// Advance runs the simulation for d of virtual time (or to the first
// violation).
func (s *Sim) Advance(d time.Duration) {
	until := s.now + d
	for len(s.Violations) == 0 && s.step(until) {
		s.check.afterStep()
	}
	if len(s.Violations) == 0 {
		s.now = until
	}
}

// Clients is the number of clients.
func (s *Sim) Clients() int { return len(s.clients) }

// StartOp starts an operation of client c (modulo the number of clients):
// kind on key k<key>; a write's value is the client's next unique value;
// a compare-and-swap expects what a client last saw of the key when fresh,
// something older otherwise. False when the client has no free slot.
func (s *Sim) StartOp(c int, kind OpKind, key int, fresh bool) bool {
	if len(s.clients) == 0 {
		return false
	}
	cl := s.clients[c%len(s.clients)]
	return cl.start(s.makeInput(cl, kind, fmt.Sprintf("k%d", key), fresh))
}

// node returns node id (modulo the cluster size, from 1).
func (s *Sim) node(id int) *Node { return s.Nodes[(id-1+len(s.Nodes))%len(s.Nodes)] }

// Crash crashes node id now (atOp 0) or at its atOp-th next I/O operation.
func (s *Sim) Crash(id int, atOp int) {
	n := s.node(id)
	if atOp <= 0 {
		if n.r != nil {
			s.Counts.PowerLosses++
		}
		n.crash("power loss (driven)")
		return
	}
	n.ioCrash(uint64(atOp))
}

// Partition isolates node a (kind 0), cuts the link a→b (kind 1), heals
// the network (kind 2), or stalls the link a→b (kind 3: it holds its
// messages until the network heals).
func (s *Sim) Partition(kind, a, b int) {
	s.partition(kind%4, s.node(a).ID, s.node(b).ID)
}

// Flip flips a bit at rest in a durable record of node id, if the
// corruption budget allows (the node then crashes soon).
func (s *Sim) Flip(id int) { s.node(id).flip() }

// FailSync arms an EIO at node id's next fdatasync (of its hard-state
// file when hardState).
func (s *Sim) FailSync(id int, hardState bool) { s.node(id).syncError(hardState) }

// FillDisk fills node id's disk for a while.
func (s *Sim) FillDisk(id int) { s.node(id).fillDisk() }

// Finish ends a driven run: it heals every fault, checks liveness and the
// end checks, then porcupine and the trace.
func (s *Sim) Finish() (Verdict, error) {
	if len(s.Violations) == 0 {
		if err := s.heal(); err != nil {
			return Verdict{}, err
		}
	}
	return s.verdict(), nil
}

// Leader is the live leader of the highest term (0: none).
func (s *Sim) Leader() raft.NodeID {
	if l := s.leader(); l != nil {
		return l.ID
	}
	return raft.None
}
