package rafttest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/trace"
)

// Env runs scenario commands. One command per line of a script, in the
// manner of etcd-io/raft's interaction tests: each handler below carries an
// Example line.
type Env struct {
	C *Cluster
	// Bugs are added to every cluster the script creates (the test that
	// re-introduces each seed bug).
	Bugs raft.Bug
	Seed uint64
	// CheckTrace, when set, replays the trace at every check command (the
	// spec's checker, set by conformance/); TraceErr keeps its first
	// rejection. The verdict is not printed: a script prints the same with
	// and without a checker.
	CheckTrace func([]trace.Event) error
	TraceErr   error
}

// Cmd is one parsed command line.
type Cmd struct {
	Name string
	Args []string          // positional
	KV   map[string]string // key=value and bare flags (value "")
}

// ParseCmd splits a command line.
func ParseCmd(line string) Cmd {
	f := strings.Fields(line)
	c := Cmd{Name: f[0], KV: map[string]string{}}
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			c.KV[k] = v
		} else {
			c.Args = append(c.Args, a)
		}
	}
	return c
}

func (c Cmd) intKV(key string, def int) (int, error) {
	v, ok := c.KV[key]
	if !ok {
		return def, nil
	}
	return strconv.Atoi(v)
}

func (c Cmd) has(flag string) bool { _, ok := c.KV[flag]; return ok || contains(c.Args, flag) }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// ids parses the positional node ids ("all" or none: every node).
func (e *Env) ids(c Cmd) ([]raft.NodeID, error) {
	var out []raft.NodeID
	for _, a := range c.Args {
		if a == "all" {
			out = nil
			break
		}
		v, err := strconv.Atoi(a)
		if err != nil || e.C.Node(raft.NodeID(v)) == nil {
			return nil, fmt.Errorf("bad node id %q", a)
		}
		out = append(out, raft.NodeID(v))
	}
	if len(out) == 0 {
		for _, sn := range e.C.Nodes {
			out = append(out, sn.ID)
		}
	}
	return out, nil
}

func (e *Env) id(c Cmd, k int) (raft.NodeID, error) {
	if len(c.Args) <= k {
		return 0, fmt.Errorf("%s: missing node id", c.Name)
	}
	v, err := strconv.Atoi(c.Args[k])
	if err != nil || e.C == nil || e.C.Node(raft.NodeID(v)) == nil {
		return 0, fmt.Errorf("%s: bad node id %q", c.Name, c.Args[k])
	}
	return raft.NodeID(v), nil
}

// Handle runs one command and returns what it printed.
func (e *Env) Handle(line string) (string, error) {
	c := ParseCmd(line)
	if c.Name != "cluster" && e.C == nil {
		return "", fmt.Errorf("%s before cluster", c.Name)
	}
	if e.C != nil {
		e.C.Out.Reset()
	}
	var err error
	switch c.Name {
	case "cluster":
		// Example: cluster n=3 prevote checkquorum bugs=self-counts-appended entries=2 inflight=2 inflightbytes=64
		// (cluster n=5 voters=3: membership, nodes 4 and 5 start outside the cluster)
		err = e.handleCluster(c)
	case "tick":
		// Example: tick 1 2 n=5   (tick all n=10)
		err = e.handleTick(c)
	case "campaign":
		// Example: campaign 1
		err = e.handleCampaign(c)
	case "propose":
		// Example: propose 1 a b c
		err = e.handlePropose(c)
	case "deliver", "drop", "dup":
		// Example: deliver from=1 to=2 type=MsgApp prev=3 n=1   (drop to=3; dup from=2)
		err = e.handleNet(c)
	case "corrupt-commit":
		// Example: corrupt-commit from=1 to=2 value=1000   (every matching MsgApp in flight;
		// needs cluster badcommits=N)
		err = e.handleCorruptCommit(c)
	case "stabilize":
		// Example: stabilize   (stabilize noflush: deliver only, disks keep their durable index)
		e.C.Stabilize(!c.has("noflush"), 100)
	case "flush":
		// Example: flush 1 2   (flush 1 to=3)
		err = e.handleFlush(c)
	case "crash", "stop":
		// Example: crash 2 keep=0   (stop 2 keep=1: stays down; crash 2 lose-truncation:
		// an unsynced truncation is lost, with the test switch truncation-not-synced)
		err = e.handleCrash(c)
	case "start":
		// Example: start 2
		err = e.handleStart(c)
	case "corrupt":
		// Example: corrupt 3 cut=1   (corrupt 3 cut=1 crash-at-boot: a power loss before
		// the boot's first Ready is persisted, then a boot: the boot window)
		err = e.handleCorrupt(c)
	case "power-loss":
		// Example: power-loss 2 cut=1   (a reboot after a power cut whose WAL finds the
		// last batch damaged: AMBIGUOUS, the log cut at cut; needs cluster powerlosses=N)
		err = e.handlePowerLoss(c)
	case "lose-hardstate":
		// Example: lose-hardstate 3 copy=older   (copy=zero: nothing verifies; unmarked: the
		// driver does not tell the core, for what the mark prevents)
		err = e.handleLoseHardState(c)
	case "fail-wal":
		// Example: fail-wal 1
		err = e.handleFailWAL(c)
	case "isolate":
		// Example: isolate 3
		err = e.handleIsolate(c)
	case "heal":
		// Example: heal
		e.C.Heal()
	case "read":
		// Example: read 1 ctx1
		err = e.handleRead(c)
	case "transfer":
		// Example: transfer 1 2
		err = e.handleTransfer(c)
	case "status":
		// Example: status 1 2
		err = e.handleStatus(c, describe)
	case "log":
		// Example: log 1 2   (durable entries plain, unsynced ones starred)
		err = e.handleStatus(c, describeLog)
	case "net":
		// Example: net   (lists the messages in flight)
		e.handleNetList()
	case "check":
		// Example: check   (the cluster invariants; Env.CheckTrace replays the trace so far)
		err = e.handleCheck()
	default:
		// add-learner, promote, remove, members: membership.go.
		var known bool
		if known, err = e.handleMembership(c); !known {
			err = fmt.Errorf("unknown command %q", c.Name)
		}
	}
	if err != nil {
		return "", err
	}
	if e.C != nil {
		e.C.CheckInvariants()
	}
	out := strings.TrimRight(e.C.Out.String(), "\n")
	if out == "" {
		out = "ok"
	}
	return out, nil
}

func (e *Env) handleCluster(c Cmd) error {
	n, err := c.intKV("n", 3)
	if err != nil {
		return err
	}
	bugs, err := raft.ParseBugs(c.KV["bugs"])
	if err != nil {
		return err
	}
	o := Options{N: n, Seed: e.Seed, PreVote: c.has("prevote"), CheckQuorum: c.has("checkquorum"),
		LeaseRead: c.has("lease"), Bugs: bugs | e.Bugs, Trace: true}
	if o.MsgEntriesMax, err = c.intKV("entries", 0); err != nil {
		return err
	}
	if o.InflightMsgsMax, err = c.intKV("inflight", 0); err != nil {
		return err
	}
	inflightBytes, err := c.intKV("inflightbytes", 0)
	if err != nil {
		return err
	}
	o.InflightBytesMax = uint64(inflightBytes)
	if o.ElectionTick, err = c.intKV("election", 10); err != nil {
		return err
	}
	if o.BadCommits, err = c.intKV("badcommits", 0); err != nil {
		return err
	}
	if o.PowerLosses, err = c.intKV("powerlosses", 0); err != nil {
		return err
	}
	if o.InitVoters, err = c.intKV("voters", 0); err != nil {
		return err
	}
	o.Membership = c.has("membership") || o.InitVoters > 0
	o.AutoPromote = c.has("autopromote")
	o.PeerRepair = c.has("peerrepair")
	cl, err := NewCluster(o)
	if err != nil {
		return err
	}
	e.C = cl
	return nil
}

func (e *Env) handleTick(c Cmd) error {
	ids, err := e.ids(c)
	if err != nil {
		return err
	}
	k, err := c.intKV("n", 1)
	if err != nil {
		return err
	}
	for r := 0; r < k; r++ {
		for _, id := range ids {
			e.C.Tick(id)
		}
	}
	return nil
}

func (e *Env) handleCampaign(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	if err := e.C.Campaign(id); err != nil {
		e.C.logf("n%d: %v", id, err)
	}
	return nil
}

func (e *Env) handlePropose(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	if err := e.C.Propose(id, c.Args[1:]...); err != nil {
		e.C.logf("n%d: %v", id, err)
	}
	return nil
}

// matchMsg filters by from=, to= and type=.
func matchMsg(c Cmd, m raft.Message) bool {
	if v, ok := c.KV["from"]; ok && v != strconv.FormatUint(uint64(m.From), 10) {
		return false
	}
	if v, ok := c.KV["to"]; ok && v != strconv.FormatUint(uint64(m.To), 10) {
		return false
	}
	if v, ok := c.KV["type"]; ok && v != m.Type.String() {
		return false
	}
	if v, ok := c.KV["prev"]; ok && v != strconv.FormatUint(m.PrevLogIndex, 10) {
		return false
	}
	return true
}

func (e *Env) handleNet(c Cmd) error {
	limit, err := c.intKV("n", -1)
	if err != nil {
		return err
	}
	var sel []raft.Message
	for _, m := range e.C.Net {
		if matchMsg(c, m) && (limit < 0 || len(sel) < limit) {
			sel = append(sel, m)
		}
	}
	for _, m := range sel {
		k := indexOf(e.C.Net, m)
		switch c.Name {
		case "deliver":
			e.C.Deliver(k)
		case "drop":
			e.C.Drop(k)
		case "dup":
			e.C.Duplicate(k)
			e.C.logf("%v duplicated", m)
		}
	}
	return nil
}

func (e *Env) handleCorruptCommit(c Cmd) error {
	value, err := c.intKV("value", 0)
	if err != nil {
		return err
	}
	var sel []raft.Message
	for _, m := range e.C.Net {
		if m.Type == raft.MsgApp && matchMsg(c, m) {
			sel = append(sel, m)
		}
	}
	if len(sel) > e.C.Opts.BadCommits-e.C.badCommits {
		return fmt.Errorf("corrupt-commit: %d messages, the cluster's budget (badcommits=) has %d left", len(sel), e.C.Opts.BadCommits-e.C.badCommits)
	}
	for _, m := range sel {
		if err := e.C.CorruptLeaderCommit(indexOf(e.C.Net, m), uint64(value)); err != nil {
			return err
		}
		e.C.badCommits++
	}
	return nil
}

// indexOf finds a message in the network (messages compare by content;
// the first equal one is as good as any).
func indexOf(net []raft.Message, m raft.Message) int {
	for k := range net {
		if net[k].String() == m.String() && net[k].Seq == m.Seq && net[k].Round == m.Round {
			return k
		}
	}
	panic("rafttest: message left the network")
}

func (e *Env) handleFlush(c Cmd) error {
	to, err := c.intKV("to", 0)
	if err != nil {
		return err
	}
	ids, err := e.ids(c)
	if err != nil {
		return err
	}
	for _, id := range ids {
		e.C.FlushTo(id, uint64(to))
	}
	return nil
}

func (e *Env) handleCrash(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	keep, err := c.intKV("keep", 0)
	if err != nil {
		return err
	}
	e.C.StopLosingTruncation(id, keep, c.has("lose-truncation"))
	if c.Name == "crash" {
		return e.C.Start(id)
	}
	return nil
}

func (e *Env) handleStart(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	return e.C.Start(id)
}

func (e *Env) handleCorrupt(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	cut, err := c.intKV("cut", 0)
	if err != nil {
		return err
	}
	corrupt := e.C.Corrupt
	if c.has("crash-at-boot") {
		corrupt = e.C.CorruptCrashAtBoot
	}
	if err := corrupt(id, uint64(cut)); err != nil {
		e.C.logf("corrupt n%d: %v", id, err)
	}
	return nil
}

func (e *Env) handlePowerLoss(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	cut, err := c.intKV("cut", 0)
	if err != nil {
		return err
	}
	if err := e.C.PowerLoss(id, uint64(cut)); err != nil {
		e.C.logf("power-loss n%d: %v", id, err)
	}
	return nil
}

func (e *Env) handleLoseHardState(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	cp := HardStateZero
	switch c.KV["copy"] {
	case "", "zero":
	case "older":
		cp = HardStateOlder
	default:
		return fmt.Errorf("lose-hardstate: copy=%q, want zero or older", c.KV["copy"])
	}
	return e.C.LoseHardState(id, cp, c.has("unmarked"))
}

func (e *Env) handleFailWAL(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	e.C.FailWAL(id)
	return nil
}

func (e *Env) handleIsolate(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	e.C.Isolate(id)
	return nil
}

func (e *Env) handleRead(c Cmd) error {
	id, err := e.id(c, 0)
	if err != nil {
		return err
	}
	if len(c.Args) < 2 {
		return fmt.Errorf("read: missing context")
	}
	if err := e.C.ReadIndex(id, c.Args[1]); err != nil {
		e.C.logf("n%d: %v", id, err)
	}
	return nil
}

func (e *Env) handleTransfer(c Cmd) error {
	from, err := e.id(c, 0)
	if err != nil {
		return err
	}
	to, err := e.id(c, 1)
	if err != nil {
		return err
	}
	sn := e.C.Node(from)
	if sn.Node == nil {
		return fmt.Errorf("n%d is down", from)
	}
	if err := sn.Node.TransferLeadership(to); err != nil {
		e.C.logf("n%d: %v", from, err)
	}
	e.C.handle(sn)
	return nil
}

func (e *Env) handleStatus(c Cmd, f func(*SimNode) string) error {
	ids, err := e.ids(c)
	if err != nil {
		return err
	}
	for _, id := range ids {
		e.C.logf("%s", f(e.C.Node(id)))
	}
	return nil
}

func (e *Env) handleNetList() {
	ms := append([]raft.Message(nil), e.C.Net...)
	sortMsgs(ms)
	for _, m := range ms {
		e.C.logf("%v", m)
	}
}

func (e *Env) handleCheck() error {
	e.C.CheckInvariants()
	if len(e.C.Violations) == 0 {
		e.C.logf("invariants ok")
	}
	if e.CheckTrace != nil && e.TraceErr == nil {
		if err := e.CheckTrace(e.C.Events); err != nil {
			e.TraceErr = fmt.Errorf("at the check of event %d: %w", len(e.C.Events), err)
		}
	}
	e.C.logf("trace of %d events", len(e.C.Events))
	return nil
}
