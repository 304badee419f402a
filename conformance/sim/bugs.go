package sim

import (
	"fmt"
	"strings"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// Bugs is a set of test-only switches across the layers: the protocol
// core's (raft.Bug, the spec's -bug names), the replica runtime's, the KV
// store's session rules and the service's (ServerBug).
type Bugs struct {
	Core    raft.Bug
	Runtime replica.Bug
	KV      kv.Bug
	Server  ServerBug
}

// Apply sets the switches in o.
func (b Bugs) Apply(o *Options) {
	o.CoreBugs, o.RuntimeBugs, o.KVBugs, o.ServerBugs = b.Core, b.Runtime, b.KV, b.Server
}

func (b Bugs) String() string {
	var names []string
	for _, s := range []string{b.Core.String(), b.Runtime.String(), b.KV.String(), b.Server.String()} {
		if s != "" && s != "none" {
			names = append(names, s)
		}
	}
	return strings.Join(names, ",")
}

// BugNames lists every switch's name.
func BugNames() []string {
	var out []string
	for _, b := range raft.AllBugs() {
		out = append(out, b.String())
	}
	for _, b := range replica.AllBugs() {
		out = append(out, b.String())
	}
	for _, b := range kv.AllBugs() {
		out = append(out, b.String())
	}
	for _, b := range AllServerBugs() {
		out = append(out, b.String())
	}
	return out
}

// ParseBugs parses a comma-separated list of switch names (BugNames).
func ParseBugs(list string) (Bugs, error) {
	var b Bugs
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !b.set(name) {
			return Bugs{}, fmt.Errorf("sim: unknown bug switch %q (known: %s)", name, strings.Join(BugNames(), ", "))
		}
	}
	return b, nil
}

func (b *Bugs) set(name string) bool {
	for _, x := range raft.AllBugs() {
		if x.String() == name {
			b.Core |= x
			return true
		}
	}
	for _, x := range replica.AllBugs() {
		if x.String() == name {
			b.Runtime |= x
			return true
		}
	}
	for _, x := range kv.AllBugs() {
		if x.String() == name {
			b.KV |= x
			return true
		}
	}
	for _, x := range AllServerBugs() {
		if x.String() == name {
			b.Server |= x
			return true
		}
	}
	return false
}

// FaultCount is how often one fault kind struck.
type FaultCount struct {
	Kind string
	N    int
}

// Faults lists how often each fault kind struck, in a fixed order.
func (c Counts) Faults() []FaultCount {
	return []FaultCount{
		{"drop", c.DropsInjected + c.ClientDrops},
		{"duplicate", c.Duplicated + c.ClientDups},
		{"delay", c.Delayed},
		{"partition", c.Partitions},
		{"power-loss", c.PowerLosses},
		{"crash-at-io", c.IOCrashes},
		{"bit-flip", c.Flips},
		{"cluster-power-loss", c.ClusterPowerLosses},
		{"synced-batch-flip", c.SyncedBatchFlips},
		{"wire-flip", c.WireFlips},
		{"fdatasync-eio", c.SyncErrors},
		{"disk-full", c.DiskFull},
		{"slow-fdatasync", c.SlowSyncs},
		{"late-notify", c.LateNotifies},
		{"clock-skew", c.SkewedClocks},
		{"client-stall", c.ClientStalls},
	}
}

// FaultsTotal is the number of faults that struck.
func (c Counts) FaultsTotal() int {
	k := 0
	for _, f := range c.Faults() {
		k += f.N
	}
	return k
}
