package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "noop-serve" {
		os.Exit(noopServe(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	raftd, etcd, dir  string
	raftdB            string   // the B side of an A/B run ("" none)
	raftdArgs         []string // extra flags of every raftd of cluster A
	raftdBArgs        []string // ... of cluster B
	rounds            int
	clients           []int
	conns, valueBytes int
	duration, warmup  time.Duration
	systems           map[string]bool
	profileDir        string
	profileSystem     string
	keep              bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("raftbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.StringVar(&o.raftd, "raftd", "bin/raftd", "the raftd binary")
	fs.StringVar(&o.raftdB, "raftd-b", "", "A/B in one run: a second raftd binary, measured over the pipelined protocol as pipelined-b right after pipelined at each client count, in a cluster of its own (b_over_a in the summary)")
	raftdArgs := fs.String("raftd-args", "", "extra flags of cluster A's raftd processes, space-separated")
	raftdBArgs := fs.String("raftd-b-args", "", "extra flags of cluster B's raftd processes (with -raftd-b; alone: B is -raftd with these flags)")
	fs.IntVar(&o.rounds, "rounds", 1, "measure every system this many times at each client count, the systems in turn (A B A B ...), and report the sums: the machine's load drifts less between the systems compared")
	fs.StringVar(&o.etcd, "etcd", "etcd", "the etcd binary (looked up on PATH); absent: the etcd fields are na")
	fs.StringVar(&o.dir, "dir", "", "where the members' data directories go (default a new directory under ./bin; never a tmpfs)")
	clients := fs.String("clients", "1,256", "client counts, comma-separated")
	fs.IntVar(&o.conns, "conns", 4, "connections of the pipelined and etcd clients at a client count at or above it (a client count below it uses one per client)")
	fs.IntVar(&o.valueBytes, "value-bytes", 100, "value size")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured time of each system at each client count")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured writes before each measurement")
	systems := fs.String("systems", "pipelined,http,noop,etcd", "which systems to measure")
	fs.StringVar(&o.profileDir, "profile", "", "write each raftd node's CPU and allocation profiles (and raftbench's own CPU profile) during the run of -profile-system at the largest client count into this directory")
	fs.StringVar(&o.profileSystem, "profile-system", "pipelined", "with -profile: the run profiled, pipelined or http")
	fs.BoolVar(&o.keep, "keep", false, "keep the data directories")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, s := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-clients %q: positive integers", *clients)
		}
		o.clients = append(o.clients, n)
	}
	o.raftdArgs, o.raftdBArgs = strings.Fields(*raftdArgs), strings.Fields(*raftdBArgs)
	if o.raftdB == "" && len(o.raftdBArgs) > 0 {
		o.raftdB = o.raftd
	}
	o.systems = map[string]bool{}
	for _, s := range strings.Split(*systems, ",") {
		switch s = strings.TrimSpace(s); s {
		case "pipelined", "http", "noop", "etcd":
			o.systems[s] = true
		default:
			return nil, fmt.Errorf("-systems: unknown %q", s)
		}
	}
	if o.raftdB != "" {
		o.systems["pipelined-b"] = true
	}
	if o.conns < 1 || o.valueBytes < 1 || o.duration <= 0 || o.rounds < 1 {
		return nil, fmt.Errorf("-conns, -value-bytes, -duration and -rounds must be positive")
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "raftbench:", err)
		return 2
	}
	if o.systems["etcd"] {
		if p, err := exec.LookPath(o.etcd); err != nil {
			fmt.Fprintf(stdout, "raftbench: etcd not found (%s; apt-get install etcd-server): skipping it, its fields are na\n", o.etcd)
			delete(o.systems, "etcd")
		} else {
			o.etcd = p
		}
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			fmt.Fprintln(stderr, "raftbench:", err)
			return 1
		}
	}
	if err := prepareDir(o); err != nil {
		fmt.Fprintln(stderr, "raftbench:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{o: o, out: stdout, log: stderr}
	err = b.run(ctx)
	b.stopAll()
	if err == nil && !o.keep {
		_ = os.RemoveAll(o.dir)
	}
	if err != nil {
		fmt.Fprintln(stderr, "raftbench:", err, "(data and logs kept in "+o.dir+")")
		return 1
	}
	return 0
}

// prepareDir makes a fresh directory for the members' data and refuses a
// memory file system: the figures are of writes fdatasync'd to a disk.
func prepareDir(o *options) error {
	if o.dir == "" {
		if err := os.MkdirAll("bin", 0o755); err != nil {
			return err
		}
		d, err := os.MkdirTemp("bin", "bench-")
		if err != nil {
			return err
		}
		o.dir = d
	}
	abs, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	o.dir = abs
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(o.dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", o.dir, err)
	}
	const tmpfsMagic, ramfsMagic = 0x01021994, 0x858458f6
	if st.Type == tmpfsMagic || st.Type == ramfsMagic {
		return fmt.Errorf("%s is on a memory file system: fdatasync costs nothing there; give -dir on a disk", o.dir)
	}
	return nil
}
