package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/durableraft/durableraft/conformance/sim"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	var exit exitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		os.Exit(int(exit))
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "raftsim:", err)
		os.Exit(2)
	}
}

// exitError is an exit status with its output already written.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// config is what the flags say.
type config struct {
	seeds, seed, seedStart   uint64
	nodes, workers           int
	faults                   sim.Faults
	rates                    rateFlags
	duration                 time.Duration
	skew                     float64
	bugs                     sim.Bugs
	trace, history, out      string
	keepGoing, quiet         bool
	peerRepair               bool
	replayArgs               []string // the flags a replay repeats
	seedSet, seedsSet, oneOf bool
}

// rateFlags are the fault rates; a negative one is drawn per seed (swarm).
type rateFlags struct {
	drop, delay, dup, wireFlip, slowSync, lateNotify float64
	delayMax, lateNotifyMax, faultEvery              time.Duration
}

// faultNames maps -faults names to the kinds.
var faultNames = map[string]func(*sim.Faults) *bool{
	"drops": func(f *sim.Faults) *bool { return &f.Drops }, "dups": func(f *sim.Faults) *bool { return &f.Dups },
	"delays": func(f *sim.Faults) *bool { return &f.Delays }, "partitions": func(f *sim.Faults) *bool { return &f.Partitions },
	"crashes": func(f *sim.Faults) *bool { return &f.Crashes }, "flips": func(f *sim.Faults) *bool { return &f.Flips },
	"eio": func(f *sim.Faults) *bool { return &f.SyncErrors }, "diskfull": func(f *sim.Faults) *bool { return &f.DiskFull },
	"slowsyncs": func(f *sim.Faults) *bool { return &f.SlowSyncs }, "latenotify": func(f *sim.Faults) *bool { return &f.LateNotify },
	"wireflips":        func(f *sim.Faults) *bool { return &f.WireFlips },
	"clusterpowerloss": func(f *sim.Faults) *bool { return &f.ClusterPowerLoss },
}

func faultList() string {
	var names []string
	for n := range faultNames {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func parseFaults(s string) (sim.Faults, error) {
	var f sim.Faults
	switch s {
	case "all":
		return sim.AllFaults(), nil
	case "none", "":
		return f, nil
	}
	for _, name := range strings.Split(s, ",") {
		get, ok := faultNames[strings.TrimSpace(name)]
		if !ok {
			return f, fmt.Errorf("-faults: unknown fault kind %q (known: %s)", name, faultList())
		}
		*get(&f) = true
	}
	return f, nil
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("raftsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Uint64Var(&c.seeds, "seeds", 1, "number of seeds to run")
	fs.Uint64Var(&c.seed, "seed", 0, "run this one seed (a replay)")
	fs.Uint64Var(&c.seedStart, "seed-start", 1, "first seed of a -seeds run")
	fs.IntVar(&c.nodes, "nodes", 0, "cluster size, 3 to 5 (0: by seed, 3 + seed mod 3)")
	fs.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "seeds run at once")
	faults := fs.String("faults", "all", "fault kinds on: all, none, or a list of "+faultList())
	fs.Float64Var(&c.rates.drop, "drop", -1, "chance a message is dropped (negative: drawn per seed)")
	fs.Float64Var(&c.rates.delay, "delay", -1, "chance a message is delayed 1 ms to -delay-max (negative: per seed)")
	fs.DurationVar(&c.rates.delayMax, "delay-max", 50*time.Millisecond, "longest delay of a delayed message")
	fs.Float64Var(&c.rates.dup, "dup", -1, "chance a message is duplicated (negative: per seed)")
	fs.Float64Var(&c.rates.wireFlip, "wire-flip", -1, "chance a shipped entry flips a bit on the wire (negative: per seed)")
	fs.Float64Var(&c.rates.slowSync, "slow-sync", -1, "chance an fdatasync takes 50-600 ms (negative: per seed)")
	fs.Float64Var(&c.rates.lateNotify, "late-notify", -1, "chance a WAL progress report arrives late (negative: per seed)")
	fs.DurationVar(&c.rates.lateNotifyMax, "late-notify-max", -1, "how late at most (negative: per seed)")
	fs.DurationVar(&c.rates.faultEvery, "fault-every", -1, "mean interval between crashes, disk faults and partitions (negative: per seed)")
	fs.DurationVar(&c.duration, "duration", 3*time.Second, "virtual time of the fault phase (the healing phase follows)")
	fs.Float64Var(&c.skew, "skew", 0.05, "clock rate skew between nodes (0: none, and no clock offsets)")
	bugs := fs.String("bugs", "", "test-only bug switches, comma-separated: "+strings.Join(sim.BugNames(), ", "))
	fs.StringVar(&c.trace, "trace", "", "write the seed's trace (ndjson) to FILE (with -seed)")
	fs.StringVar(&c.history, "history", "", "write the seed's client history (ndjson) to FILE (with -seed)")
	fs.StringVar(&c.out, "out", ".", "directory for a failing seed's trace, history and visualization")
	fs.BoolVar(&c.keepGoing, "keep-going", false, "run every seed, past a failing one")
	fs.BoolVar(&c.peerRepair, "peer-repair", true, "the repair of TRUNCATED members from their peers, as raftd --peer-repair (sim.Options.PeerRepair; bit flips then strike any set that is not a quorum)")
	fs.BoolVar(&c.quiet, "q", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "seed":
			c.seedSet = true
		case "seeds":
			c.seedsSet = true
		case "seed-start", "workers", "trace", "history", "out", "keep-going", "q":
		default:
			c.replayArgs = append(c.replayArgs, "-"+f.Name+"="+f.Value.String())
		}
	})
	var err error
	if c.faults, err = parseFaults(*faults); err != nil {
		return nil, err
	}
	if c.bugs, err = sim.ParseBugs(*bugs); err != nil {
		return nil, err
	}
	switch {
	case c.seedSet && c.seedsSet:
		return nil, errors.New("-seed replays one seed; -seeds runs many: not both")
	case c.seedSet:
		c.seedStart, c.seeds = c.seed, 1
	case (c.trace != "" || c.history != "") && c.seeds != 1:
		return nil, errors.New("-trace and -history write one seed's files: use them with -seed")
	case c.nodes != 0 && (c.nodes < 3 || c.nodes > 5):
		return nil, fmt.Errorf("-nodes %d: want 3, 4 or 5 (or 0: by seed)", c.nodes)
	case c.seeds == 0 || c.workers < 1:
		return nil, errors.New("-seeds and -workers must be at least 1")
	}
	return c, nil
}

// options are the simulator's options for one seed.
func (c *config) options(seed uint64) sim.Options {
	o := sim.Default(seed)
	if c.nodes != 0 {
		o.N = c.nodes
	}
	o.Faults, o.Duration, o.Skew, o.PeerRepair = c.faults, c.duration, c.skew, c.peerRepair
	r := c.rates
	set := func(dst *float64, v float64) {
		if v >= 0 {
			*dst = v
		}
	}
	set(&o.Rates.Drop, r.drop)
	set(&o.Rates.Delay, r.delay)
	set(&o.Rates.Dup, r.dup)
	set(&o.Rates.WireFlip, r.wireFlip)
	set(&o.Rates.SlowSync, r.slowSync)
	set(&o.Rates.LateNotify, r.lateNotify)
	o.Rates.DelayMax = r.delayMax
	if r.lateNotifyMax >= 0 {
		o.Rates.LateNotifyMax = r.lateNotifyMax
	}
	if r.faultEvery > 0 {
		o.Rates.FaultEvery = r.faultEvery
	}
	c.bugs.Apply(&o)
	return o
}
