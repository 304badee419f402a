package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: raftspec <command> [flags]

commands:
  explore      breadth-first search of every reachable state within the bounds
  simulate     seeded random walks within the bounds
  check-trace  replay ndjson traces against the spec (a directory: one cluster's per-node traces, merged)
  viz          draw a trace as a self-contained HTML page (raftspec viz TRACE > run.html)
  serve        explore the model's state space in the browser
  story        replay a failure story step by step (spec/testdata/stories/*.txt)
  liveness     check that from every reachable state a fault-free continuation elects a leader that commits

run 'raftspec <command> -h' for the flags of a command.
`)
}

func main() {
	// The explorer's memory is its fingerprint set and queue: long-lived and
	// pointer-free, so collecting more often costs little, while Go's default
	// (a heap twice the live data) would double what a large run needs.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "explore":
		err = explore(os.Args[2:], os.Stdout, os.Stderr)
	case "simulate":
		err = simulate(os.Args[2:], os.Stdout, os.Stderr)
	case "check-trace":
		err = checkTrace(os.Args[2:], os.Stdout, os.Stderr)
	case "viz":
		err = vizCommand(os.Args[2:], os.Stdout, os.Stderr)
	case "serve":
		err = serveCommand(os.Args[2:], os.Stdout, os.Stderr)
	case "story":
		err = storyCommand(os.Args[2:], os.Stdout, os.Stderr)
	case "liveness":
		err = livenessCommand(os.Args[2:], os.Stdout, os.Stderr)
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		return
	default:
		fmt.Fprintf(os.Stderr, "raftspec: unknown command %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	var exit exitError
	switch {
	case errors.As(err, &exit):
		os.Exit(int(exit))
	case err != nil:
		fmt.Fprintln(os.Stderr, "raftspec:", err)
		os.Exit(2)
	}
}

// exitError is an exit status whose explanation is already printed.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

type modelFlags struct {
	profile, bugs                    string
	servers, values                  int
	maxTerm, maxLog, maxDup, maxMsgs int
	crashes, corruptions, badCommits int
	powerLosses, wipes               int
	production, membership           bool
	initVoters                       int
	repair                           bool
	markedVotes                      bool
}

func (f *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.profile, "profile", "raft", "protocol: raft (raft.tla) or durable (with the durability extensions)")
	fs.IntVar(&f.servers, "servers", 3, "Cardinality(Server)")
	fs.IntVar(&f.values, "values", 1, "Cardinality(Value)")
	fs.IntVar(&f.maxTerm, "max-term", 2, "bound: currentTerm[i] <= N")
	fs.IntVar(&f.maxLog, "max-log", 1, "bound: Len(log[i]) <= N")
	fs.IntVar(&f.maxDup, "max-dup", 1, "bound: messages[m] <= N")
	fs.IntVar(&f.maxMsgs, "max-msgs", 1, "bound: Cardinality(DOMAIN messages) <= N")
	fs.IntVar(&f.crashes, "crashes", 0, "durable: Crash steps a behaviour may take")
	fs.IntVar(&f.corruptions, "corruptions", 0, "durable: Corrupt steps a behaviour may take")
	fs.IntVar(&f.badCommits, "bad-commits", 0, "production: CorruptLeaderCommit steps a behaviour may take (a peer's bad leader commit)")
	fs.IntVar(&f.powerLosses, "power-losses", 0, "durable: PowerLoss steps a behaviour may take (a reboot after a power cut: torn tail or damaged last synced batch, verdict AMBIGUOUS)")
	fs.BoolVar(&f.production, "production", false, "durable: add the production core's actions (spec/production.go)")
	fs.BoolVar(&f.membership, "membership", false, "configurations in the log and single-server changes (docs/membership.md)")
	fs.BoolVar(&f.markedVotes, "marked-votes", false, "durable: marked votes, the rule impl/raft runs: every voter that is not CLEAN grants marked (a TRUNCATED one too), a candidate that is not CLEAN leads on a unanimous election (docs/durable-raft.md rule 7)")
	fs.BoolVar(&f.repair, "repair", false, "durable: a TRUNCATED member is repaired from its peers without a leader (spec/repair.go, docs/repair.md)")
	fs.IntVar(&f.initVoters, "init-voters", 0, "membership: servers 1..N are the initial voters, the others not members (0: all)")
	fs.IntVar(&f.wipes, "wipes", 0, "Wipe steps a behaviour may take (a member's data directory emptied, restarted under its old id: spec/wipe.go)")
	fs.StringVar(&f.bugs, "bug", "", "comma-separated fixes (durable) or raft.tla rules (either profile) to switch off: "+strings.Join(spec.AllBugs(), ", "))
}

func (f *modelFlags) model() (*spec.Model, error) {
	p, err := spec.ParseProfile(f.profile)
	if err != nil {
		return nil, err
	}
	bugs, err := spec.ParseBugs(f.bugs)
	if err != nil {
		return nil, err
	}
	return spec.NewModel(spec.Config{Profile: p, Servers: f.servers, Values: f.values,
		MaxTerm: f.maxTerm, MaxLog: f.maxLog, MaxDup: f.maxDup, MaxMsgs: f.maxMsgs,
		Crashes: f.crashes, Corruptions: f.corruptions, BadCommits: f.badCommits, PowerLosses: f.powerLosses, Bugs: bugs, Production: f.production,
		Membership: f.membership, InitVoters: f.initVoters, Repair: f.repair, Wipes: f.wipes, MarkedVotes: f.markedVotes})
}

func explore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	workers := fs.Int("workers", 1, "parallel workers")
	invariant := fs.String("invariant", "", "check only this invariant (compare verdicts with TLC one to one)")
	tracePath := fs.String("trace", "", "where to write a counterexample (default: a new file in the temp dir)")
	sometimes := fs.String("sometimes", "", "comma-separated reachability properties that must be reached (or 'all'); unreached fails the run")
	witnessDir := fs.String("witness-dir", "", "write a trace reaching each reached property into this directory")
	progress := fs.Duration("progress", time.Minute, "interval between progress lines on stderr")
	maxDistinct := fs.Int64("max-distinct", 0, "stop after this many distinct states (result=incomplete); 0 = no limit")
	symmetry := fs.String("symmetry", "", "count one state per class under renamings: 'servers' (TLC's SYMMETRY Permutations(Server)) or 'servers,values'")
	merge := fs.Bool("merge", false, "merge states that differ only in variables nothing reads (dead leader/candidate state, write-only history); counts are no longer TLC's")
	withoutList := fs.String("without", "", withoutUsage)
	dfs := fs.Bool("dfs", false, "search depth first, with one worker: deep states early, long counterexamples")
	expectCounts := fs.String("expect-counts", "", "DISTINCT/GENERATED: fail (result=counts-differ) when a complete search counts otherwise (TLC's figures, for mutation testing)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := mf.model()
	if err != nil {
		return err
	}
	without, err := spec.ParseActions(*withoutList)
	if err != nil {
		return err
	}
	symServers, symValues, err := parseSymmetry(*symmetry)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "raftspec explore: %v, workers=%d%s\n", m.Config, *workers, reductionNote(*symmetry, *merge, without)+map[bool]string{true: " depth-first"}[*dfs])
	if err := printInvariants(m, *invariant, stderr); err != nil {
		return err
	}
	res, err := spec.Explore(m, spec.Options{Workers: *workers, Invariant: *invariant,
		Progress: stderr, ProgressEvery: *progress, MaxDistinct: *maxDistinct,
		Symmetry: symServers, SymmetryValues: symValues, Merge: *merge, Without: without, DepthFirst: *dfs})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Finished in %v: %d states generated, %d distinct states found, depth %d.\n",
		res.Elapsed.Round(time.Millisecond), res.Generated, res.Distinct, res.Depth)
	if err := reportReached(m, res.Reached, *witnessDir, stdout); err != nil {
		return err
	}
	if v := res.Violation; v != nil {
		path, err := writeCounterexample(m, v, *tracePath, stderr)
		if err != nil {
			return err
		}
		for k, st := range v.Trace {
			if k == 0 {
				fmt.Fprintf(stderr, "  %2d: Init\n", k)
				continue
			}
			fmt.Fprintf(stderr, "  %2d: %v\n", k, st.Label)
		}
		fmt.Fprintln(stdout, res.Summary(path))
		return exitError(1)
	}
	if err := checkSometimes(res.Reached, *sometimes, res.Summary(""), stdout, stderr); err != nil {
		return err
	}
	if got := fmt.Sprintf("%d/%d", res.Distinct, res.Generated); *expectCounts != "" && res.Complete && got != *expectCounts {
		fmt.Fprintf(stdout, "%s result=counts-differ want=%s\n", strings.TrimSuffix(res.Summary(""), " result=ok"), *expectCounts)
		return exitError(1)
	}
	fmt.Fprintln(stdout, res.Summary(""))
	if !res.Complete {
		return exitError(1)
	}
	return nil
}

func parseSymmetry(s string) (servers, values bool, err error) {
	switch s {
	case "", "none":
		return false, false, nil
	case "servers":
		return true, false, nil
	case "servers,values", "all":
		return true, true, nil
	}
	return false, false, fmt.Errorf("-symmetry %q: want servers or servers,values", s)
}

func reductionNote(symmetry string, merge bool, without spec.ActionSet) string {
	s := ""
	if symmetry != "" && symmetry != "none" {
		s += " symmetry=" + symmetry
	}
	if merge {
		s += " merge"
	}
	if !without.Empty() {
		s += " without=" + without.String()
	}
	return s
}

const withoutUsage = "search the sub-model without these actions (comma-separated, e.g. DropMessage,Restart): its violations are real ones, its counts are not TLC's"

func simulate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	walks := fs.Int("walks", 1000, "number of random walks")
	depth := fs.Int("depth", 100, "steps per walk at most")
	seed := fs.Uint64("seed", 1, "seed of walk 0 (walk k uses seed+k)")
	workers := fs.Int("workers", 1, "parallel workers")
	invariant := fs.String("invariant", "", "check only this invariant")
	tracePath := fs.String("trace", "", "where to write a counterexample (default: a new file in the temp dir)")
	traceDir := fs.String("trace-dir", "", "write every walk as a trace into this directory")
	sometimes := fs.String("sometimes", "", "comma-separated reachability properties some walk must reach (or 'all'); unreached fails the run")
	witnessDir := fs.String("witness-dir", "", "write a walk prefix reaching each reached property into this directory")
	withoutList := fs.String("without", "", withoutUsage)
	swarm := fs.String("swarm", "actions", "what each walk draws weights for: 'actions', or 'servers' (each action and server, a wider range)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := mf.model()
	if err != nil {
		return err
	}
	without, err := spec.ParseActions(*withoutList)
	if err != nil {
		return err
	}
	if *swarm != "actions" && *swarm != "servers" {
		return fmt.Errorf("-swarm %q: want actions or servers", *swarm)
	}
	fmt.Fprintf(stderr, "raftspec simulate: %v, walks=%d depth=%d seed=%d swarm=%s%s\n", m.Config, *walks, *depth, *seed, *swarm, reductionNote("", false, without))
	if err := printInvariants(m, *invariant, stderr); err != nil {
		return err
	}
	opt := spec.SimOptions{Walks: *walks, Depth: *depth, Seed: *seed, Invariant: *invariant, Workers: *workers, Without: without,
		SwarmServers: *swarm == "servers"}
	var (
		writeMu  sync.Mutex // OnWalk runs on every worker
		writeErr error
	)
	if *traceDir != "" {
		opt.OnWalk = func(walk int, steps []spec.Step) {
			p := filepath.Join(*traceDir, fmt.Sprintf("walk-%06d.ndjson", walk))
			if err := m.WriteTraceFile(p, steps); err != nil {
				writeMu.Lock()
				writeErr = errors.Join(writeErr, err)
				writeMu.Unlock()
			}
		}
	}
	start := time.Now()
	res, err := spec.Simulate(m, opt)
	if err != nil {
		return err
	}
	if writeErr != nil {
		return writeErr
	}
	fmt.Fprintf(stderr, "Finished in %v.\n", time.Since(start).Round(time.Millisecond))
	if err := reportReached(m, res.Reached, *witnessDir, stdout); err != nil {
		return err
	}
	if v := res.Violation; v != nil {
		path, err := writeCounterexample(m, v, *tracePath, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, res.Summary(path))
		return exitError(1)
	}
	if err := checkSometimes(res.Reached, *sometimes, res.Summary(""), stdout, stderr); err != nil {
		return err
	}
	fmt.Fprintln(stdout, res.Summary(""))
	return nil
}

// checkSometimes fails the run, with summary's result=ok turned into
// result=unreachable, when a listed reachability property (comma-separated)
// was not reached.
func checkSometimes(reached []spec.Reachability, list, summary string, stdout, stderr io.Writer) error {
	if list == "" {
		return nil
	}
	if err := spec.CheckReached(reached, strings.Split(list, ",")); err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		fmt.Fprintln(stdout, strings.Replace(summary, "result=ok", "result=unreachable", 1))
		return exitError(1)
	}
	return nil
}

// writeCounterexample writes a violation's behaviour as a trace to path (a
// new temporary file when path is empty) and says what broke.
func writeCounterexample(m *spec.Model, v *spec.Violation, path string, stderr io.Writer) (string, error) {
	if path == "" {
		f, err := os.CreateTemp("", "raftspec-counterexample-*.ndjson")
		if err != nil {
			return "", err
		}
		path = f.Name()
		f.Close()
	}
	if err := m.WriteTraceFile(path, v.Trace); err != nil {
		return "", err
	}
	fmt.Fprintf(stderr, "Error: invariant %s is violated: %s\n", v.Invariant, v.Detail)
	fmt.Fprintln(stderr, drawHint(path))
	return path, nil
}

// printInvariants says which invariants the run checks.
func printInvariants(m *spec.Model, only string, w io.Writer) error {
	invs, err := m.InvariantsFor(only)
	if err != nil {
		return err
	}
	var names []string
	for _, inv := range invs {
		names = append(names, inv.Name)
	}
	fmt.Fprintf(w, "checking invariants: %s\n", strings.Join(names, ", "))
	return nil
}

// reportReached prints the reachability table and writes witnesses.
func reportReached(m *spec.Model, reached []spec.Reachability, witnessDir string, stdout io.Writer) error {
	for _, r := range reached {
		status := "unreached"
		if r.Found {
			status = "reached"
		}
		fmt.Fprintf(stdout, "sometimes %-24s %s\n", r.Name, status)
		if r.Found && witnessDir != "" {
			if err := m.WriteTraceFile(filepath.Join(witnessDir, r.Name+".ndjson"), r.Witness()); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkTrace(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check-trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tornTail := fs.Bool("torn-tail", false, "drop a torn last line (a writer killed inside it) instead of rejecting the trace")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("check-trace: no trace files given")
	}
	failed := 0
	for _, path := range fs.Args() {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			ok, err := checkDir(path, *tornTail, stdout)
			if err != nil {
				return err
			}
			if !ok {
				failed++
			}
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		rd := trace.NewReader(f, trace.ReadOptions{TornTail: *tornTail})
		n, err := spec.CheckTraceEvents(rd)
		f.Close()
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "%s: REJECTED: %v\n", path, err)
			continue
		}
		torn := ""
		if rd.Torn() {
			torn = "; a torn last line dropped"
		}
		fmt.Fprintf(stdout, "%s: ok (%d events%s)\n", path, n, torn)
	}
	if failed > 0 {
		return exitError(1)
	}
	return nil
}

// livenessCommand is raftspec liveness: spec.CheckLiveness on the model.
func livenessCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("liveness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	extraTerm := fs.Int("extra-term", 1, "the continuations' bound: currentTerm[i] <= max-term + N")
	extraLog := fs.Int("extra-log", 1, "the continuations' bound: Len(log[i]) <= max-log + N")
	extraMsgs := fs.Int("extra-msgs", 0, "the continuations' bound: messages <= max-msgs + N")
	maxStates := fs.Int("max-states", 0, "stop (result=incomplete) past this many stored states; 0 = no limit")
	tracePath := fs.String("trace", "", "where to write the path to a stuck state (default: a new file in the temp dir)")
	progress := fs.Duration("progress", time.Minute, "interval between progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := mf.model()
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "raftspec liveness: %v, continuations: term +%d, log +%d, msgs +%d, no faults\n", m.Config, *extraTerm, *extraLog, *extraMsgs)
	res, err := spec.CheckLiveness(m, spec.LivenessOptions{ExtraTerm: *extraTerm, ExtraLog: *extraLog, ExtraMsgs: *extraMsgs,
		MaxStates: *maxStates, Progress: stderr, ProgressEvery: *progress})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Finished in %v.\n", res.Elapsed.Round(time.Millisecond))
	if res.Stuck > 0 {
		path := *tracePath
		if path == "" {
			f, err := os.CreateTemp("", "raftspec-stuck-*.ndjson")
			if err != nil {
				return err
			}
			path = f.Name()
			f.Close()
		}
		if err := m.WriteTraceFile(path, res.Trace); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Error: from the last state below no fault-free continuation elects a leader that commits (%d states reachable from it)\n", res.StuckFuture)
		for k, st := range res.Trace {
			if k == 0 {
				fmt.Fprintf(stderr, "  %2d: Init\n", k)
				continue
			}
			fmt.Fprintf(stderr, "  %2d: %v\n", k, st.Label)
		}
		fmt.Fprintln(stderr, drawHint(path))
		fmt.Fprintln(stdout, res.Summary(path))
		return exitError(1)
	}
	fmt.Fprintln(stdout, res.Summary(""))
	if !res.Complete {
		return exitError(1)
	}
	return nil
}
