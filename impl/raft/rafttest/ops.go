package rafttest

import (
	"errors"
	"fmt"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/trace"
)

// The operations on a cluster. Each leaves every node's Ready handled.

// Tick ticks a running node.
func (c *Cluster) Tick(id raft.NodeID) {
	if sn := c.Node(id); sn != nil && sn.Node != nil {
		sn.Node.Tick()
		c.handle(sn)
	}
}

// Propose proposes data at id.
func (c *Cluster) Propose(id raft.NodeID, data ...string) error {
	sn := c.Node(id)
	if sn == nil || sn.Node == nil {
		return fmt.Errorf("n%d is down", id)
	}
	var ds [][]byte
	for _, d := range data {
		ds = append(ds, []byte(d))
	}
	_, err := sn.Node.Propose(ds...)
	c.handle(sn)
	return err
}

// Campaign makes id start an election.
func (c *Cluster) Campaign(id raft.NodeID) error {
	sn := c.Node(id)
	if sn == nil || sn.Node == nil {
		return fmt.Errorf("n%d is down", id)
	}
	err := sn.Node.Campaign()
	c.handle(sn)
	return err
}

// netEvent writes a network action on a spec message to the trace.
func (c *Cluster) netEvent(action string, m *raft.Message) {
	if !c.Opts.Trace {
		return
	}
	names := c.Opts.TraceNames
	tm := raft.TraceMessage(m, names)
	if tm == nil {
		return
	}
	c.addEvent(trace.Event{Action: action, Node: raft.TraceName(names, m.To), Peer: raft.TraceName(names, m.From), Msg: tm})
}

// take removes message k from the network.
func (c *Cluster) take(k int) raft.Message {
	m := c.Net[k]
	c.Net = append(c.Net[:k:k], c.Net[k+1:]...)
	return m
}

// Deliver hands message k of the network to its recipient. A message to a
// node that is down, or over a blocked link, is lost.
func (c *Cluster) Deliver(k int) {
	m := c.take(k)
	sn := c.Node(m.To)
	if sn.Node == nil || c.Blocked[[2]raft.NodeID{m.From, m.To}] {
		c.netEvent("DropMessage", &m)
		c.logf("%v dropped", m)
		return
	}
	c.logf("%v", m)
	if m.Type == raft.MsgAppRespPassive {
		c.PassiveReports++
	}
	if err := sn.Node.Step(m); err != nil && !errors.Is(err, raft.ErrWALFailed) {
		c.logf("  refused: %v", err)
	}
	c.handle(sn)
}

// Drop loses message k.
func (c *Cluster) Drop(k int) {
	m := c.take(k)
	c.netEvent("DropMessage", &m)
	c.logf("%v dropped", m)
}

// Duplicate copies message k.
func (c *Cluster) Duplicate(k int) {
	m := c.Net[k]
	c.netEvent("DuplicateMessage", &m)
	c.Net = append(c.Net, m)
}

// CorruptLeaderCommit sets the LeaderCommit of MsgApp k of the network to
// value, as a peer's bad value that the receiver's checks cannot see (spec
// CorruptLeaderCommit: the trace logs the message before and the value).
func (c *Cluster) CorruptLeaderCommit(k int, value uint64) error {
	m := &c.Net[k]
	if m.Type != raft.MsgApp || value <= m.LeaderCommit {
		return fmt.Errorf("%v: only a MsgApp's leader commit can be raised, to more than %d", *m, m.LeaderCommit)
	}
	if c.Opts.Trace {
		names := c.Opts.TraceNames
		cut := int(value)
		c.addEvent(trace.Event{Action: "CorruptLeaderCommit", Node: raft.TraceName(names, m.To), Peer: raft.TraceName(names, m.From),
			Msg: raft.TraceMessage(m, names), Cut: &cut})
	}
	m.LeaderCommit = value
	c.logf("%v", *m)
	return nil
}

// Flush makes everything written to id's disk durable, or fails the WAL
// when it was told to fail, and reports it to the node.
func (c *Cluster) Flush(id raft.NodeID) {
	c.FlushTo(id, 0)
}

// FlushTo makes the written log durable up to index (0: all of it).
func (c *Cluster) FlushTo(id raft.NodeID, index uint64) {
	sn := c.Node(id)
	if sn == nil || sn.Node == nil {
		return
	}
	w := sn.WAL
	if w.Failed {
		sn.Node.Advance(raft.AdvanceInfo{Failed: true, Reason: "fdatasync: input/output error"})
		c.handle(sn)
		return
	}
	last := w.Log.LastIndex()
	if index == 0 || index > last {
		index = last
	}
	if index > w.Durable {
		w.Stale = nil // the flusher syncs a pending truncation first (spec Flush, FlushTo)
	}
	w.Durable = max(w.Durable, index)
	w.CommitDurable = w.Commit
	t, _ := w.Log.Term(w.Durable)
	sn.Node.Advance(raft.AdvanceInfo{DurableIndex: w.Durable, DurableTerm: t})
	c.handle(sn)
}

// FailWAL makes id's next flush fail.
func (c *Cluster) FailWAL(id raft.NodeID) {
	if sn := c.Node(id); sn != nil && sn.Node != nil {
		sn.WAL.Failed = true
		c.Flush(id)
	}
}

// Stop crashes id and leaves it down. keep of its unsynced entries survive
// on disk (-1: all). A truncation not yet synced (raft.BugTruncationNotSynced)
// is lost or kept as the seed decides.
func (c *Cluster) Stop(id raft.NodeID, keep int) {
	if sn := c.Node(id); sn != nil && sn.WAL.Stale != nil {
		c.StopLosingTruncation(id, keep, c.rng.IntN(2) == 0)
		return
	}
	c.StopLosingTruncation(id, keep, false)
}

// StopLosingTruncation is Stop with the fate of an unsynced truncation
// chosen: lost (the log comes back as it was durable before it) or kept.
func (c *Cluster) StopLosingTruncation(id raft.NodeID, keep int, lose bool) {
	sn := c.Node(id)
	if sn == nil || sn.Node == nil {
		return
	}
	w := sn.WAL
	last := w.Log.LastIndex()
	k := last
	if keep >= 0 {
		k = min(last, w.Durable+uint64(keep))
	}
	sn.stopDurable = sn.Node.Status().Durable
	sn.Node = nil
	w.Failed = false
	if w.Stale != nil && lose {
		w.Log, w.Durable, w.Stale = w.Stale, w.Stale.LastIndex(), nil
		c.logf("n%d crashed and lost an unsynced truncation: back to %d entries", id, w.Durable)
		return
	}
	w.Log.Prefix(k)
	w.Durable, w.Stale = k, nil
	c.logf("n%d crashed, keeps %d entries", id, k)
}

// Start boots a stopped node.
func (c *Cluster) Start(id raft.NodeID) error {
	sn := c.Node(id)
	if sn == nil || sn.Node != nil {
		return fmt.Errorf("n%d is not down", id)
	}
	if c.crashes >= raft.DefaultTraceBudget {
		return errors.New("crash budget of the trace spent")
	}
	c.crashes++
	return c.start(sn, raft.VerdictClean)
}

// Restart crashes id and boots it again.
func (c *Cluster) Restart(id raft.NodeID, keep int) error {
	c.Stop(id, keep)
	return c.Start(id)
}

// Corrupt crashes id and boots it with its log cut at cut, inside the
// durable prefix: the WAL's TRUNCATED verdict. It refuses to leave a
// quorum TRUNCATED (the corruption budget the safety argument allows).
// The WAL makes the TRUNCATED mark durable before the cut (impl/wal's
// Open); with raft.BugMarkAfterCut only the core's first Ready does.
func (c *Cluster) Corrupt(id raft.NodeID, cut uint64) error {
	return c.corrupt(id, cut, false)
}

// CorruptCrashAtBoot is Corrupt with a power loss during the boot, before
// its first Ready is persisted, and a boot after it (the boot window).
func (c *Cluster) CorruptCrashAtBoot(id raft.NodeID, cut uint64) error {
	return c.corrupt(id, cut, true)
}

func (c *Cluster) corrupt(id raft.NodeID, cut uint64, crashAtBoot bool) error {
	sn := c.Node(id)
	if sn == nil {
		return fmt.Errorf("no n%d", id)
	}
	durable := sn.stopDurable
	if sn.Node != nil {
		durable = sn.Node.Status().Durable
	}
	if cut >= durable {
		return fmt.Errorf("cut %d is not inside n%d's durable prefix %d", cut, id, durable)
	}
	truncated := 1
	for _, o := range c.Nodes {
		if o != sn && (o.WAL.HS.TruncatedAtTerm != 0 || o.WAL.HSLost) {
			truncated++
		}
	}
	if truncated*2 > len(c.Nodes) {
		return errors.New("a quorum would be TRUNCATED (or have lost its hard state)")
	}
	if c.corrupts >= raft.DefaultTraceBudget {
		return errors.New("corruption budget of the trace spent")
	}
	c.corrupts++
	if sn.Node != nil {
		sn.Node = nil
	}
	w := sn.WAL
	w.Log.Prefix(cut)
	w.Durable, w.Failed, w.Stale = cut, false, nil
	if c.Opts.Bugs&raft.BugMarkAfterCut == 0 && w.HS.Term > 0 {
		w.PrevHS = w.HS
		w.HS.TruncatedAtTerm = w.HS.Term
	}
	c.logf("n%d corrupted, recovers %d entries", id, cut)
	if !crashAtBoot {
		return c.start(sn, raft.VerdictTruncated)
	}
	if err := c.boot(sn, raft.VerdictTruncated); err != nil {
		return err
	}
	sn.Node = nil
	c.logf("n%d crashed while booting", id)
	if c.crashes >= raft.DefaultTraceBudget {
		return errors.New("crash budget of the trace spent")
	}
	c.crashes++
	return c.start(sn, raft.VerdictClean)
}

// PowerLoss crashes id and boots it with the WAL's AMBIGUOUS verdict (a
// power cut after which the last batch fails verification, nothing vouching
// for it: impl/wal row R6), the log cut at cut. A cut at the durable index
// is a torn unsynced tail; below it, the last synced batch was damaged at
// rest, which the run allows only while fewer than a quorum of the members
// are damaged or TRUNCATED (spec PowerLoss's budget). The WAL writes the
// mark before the cut (AMBIGUOUS, unless a TRUNCATED mark is there); with
// raft.BugAmbiguousTailClean it writes none (the WAL's TORN_TAIL before
// issue 10 item 2).
func (c *Cluster) PowerLoss(id raft.NodeID, cut uint64) error {
	sn := c.Node(id)
	if sn == nil {
		return fmt.Errorf("no n%d", id)
	}
	durable := sn.stopDurable
	if sn.Node != nil {
		durable = sn.Node.Status().Durable
	}
	if cut > durable {
		return fmt.Errorf("cut %d beyond n%d's durable log %d", cut, id, durable)
	}
	if c.powerLosses >= c.Opts.PowerLosses {
		return errors.New("power-loss budget of the run (cluster powerlosses=N) spent")
	}
	if cut < durable {
		hurt := 1
		for _, o := range c.Nodes {
			if o != sn && (o.WAL.HS.TruncatedAtTerm != 0 || o.WAL.HSLost) { // a damaged member is marked until repaired
				hurt++
			}
		}
		if hurt*2 > len(c.Nodes) {
			return errors.New("a quorum would be damaged or TRUNCATED")
		}
	}
	c.powerLosses++
	sn.Node = nil
	w := sn.WAL
	w.Log.Prefix(cut)
	w.Durable, w.Failed, w.Stale = cut, false, nil
	if c.Opts.Bugs&raft.BugAmbiguousTailClean == 0 {
		w.PrevHS = w.HS
		w.HS.Ambiguous = w.HS.TruncatedAtTerm == 0 || w.HS.Ambiguous
		w.HS.TruncatedAtTerm = max(w.HS.Term, 1)
	}
	c.logf("n%d lost power, recovers %d entries (AMBIGUOUS)", id, cut)
	return c.start(sn, raft.VerdictAmbiguous)
}

// HardStateCopy is what a WAL that lost its hard state gives back.
type HardStateCopy uint8

// The copies.
const (
	// HardStateZero: nothing verifies (impl/wal rows H2, H7).
	HardStateZero HardStateCopy = iota
	// HardStateOlder: the copy before the last write (row H6 choosing the
	// older of two copies that disagree).
	HardStateOlder
)

// LoseHardState crashes id (keeping its durable log and none of its
// unsynced entries) and boots it with its hard state lost: the copy the WAL
// gives back, and the WAL's loss mark, sticky for every later boot. With
// unmarked the driver does not tell the core (Boot.HardStateLost false):
// what the mark prevents, for tests.
func (c *Cluster) LoseHardState(id raft.NodeID, cp HardStateCopy, unmarked bool) error {
	sn := c.Node(id)
	if sn == nil {
		return fmt.Errorf("no n%d", id)
	}
	if sn.Node != nil {
		c.StopLosingTruncation(id, 0, false)
	}
	w := sn.WAL
	switch cp {
	case HardStateZero:
		w.HS = raft.HardState{}
	case HardStateOlder:
		w.HS = w.PrevHS
	}
	w.PrevHS, w.HSLost = w.HS, !unmarked
	c.HardStateLosses++
	c.logf("n%d lost its hard state: recovers {Term:%d Vote:%d LearnedCommit:%d TruncatedAtTerm:%d}", id,
		w.HS.Term, w.HS.Vote, w.HS.LearnedCommit, w.HS.TruncatedAtTerm)
	if c.crashes >= 200 {
		return errors.New("crash budget of the trace spent")
	}
	c.crashes++
	return c.start(sn, raft.VerdictClean)
}

// Isolate blocks every link of id; Heal unblocks all.
func (c *Cluster) Isolate(id raft.NodeID) {
	for _, o := range c.Nodes {
		if o.ID != id {
			c.Blocked[[2]raft.NodeID{id, o.ID}] = true
			c.Blocked[[2]raft.NodeID{o.ID, id}] = true
		}
	}
}

// Heal unblocks every link.
func (c *Cluster) Heal() { c.Blocked = map[[2]raft.NodeID]bool{} }

// Stabilize delivers messages until the network is empty (or rounds run
// out), flushing every disk between rounds when flush is set.
func (c *Cluster) Stabilize(flush bool, rounds int) {
	for r := 0; r < rounds; r++ {
		if flush {
			for _, sn := range c.up() {
				if sn.WAL.Durable < sn.WAL.Log.LastIndex() {
					c.Flush(sn.ID)
				}
			}
		}
		if len(c.Net) == 0 {
			if !flush || c.allFlushed() {
				return
			}
			continue
		}
		for len(c.Net) > 0 {
			c.Deliver(0)
		}
	}
}

func (c *Cluster) allFlushed() bool {
	for _, sn := range c.up() {
		if sn.WAL.Durable < sn.WAL.Log.LastIndex() {
			return false
		}
	}
	return true
}
