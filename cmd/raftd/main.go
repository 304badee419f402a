package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/durableraft/durableraft/impl/lossyfs"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/server"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		id           = fs.Uint64("id", 0, "this node's id (required; one of --peers)")
		data         = fs.String("data", "", "data directory (required)")
		listenClient = fs.String("listen-client", "127.0.0.1:7001", "client address: HTTP and the pipelined protocol")
		listenPeer   = fs.String("listen-peer", "127.0.0.1:7101", "peer address")
		advertise    = fs.String("advertise-client", "", "client address told to peers (default: the listener's)")
		peers        = fs.String("peers", "", "the initial cluster, id=host:port of each peer address, read at the first boot only")
		token        = fs.String("cluster-token", "durableraft", "enters the cluster id at the first boot")
		join         = fs.Bool("join", false, "at the first boot, join a running cluster as a learner (after `raftctl members add`, which prints these flags): --peers then names the current members and this node, with --join-cluster-id and --join-initial-voters; the node votes and campaigns only once promoted")
		joinID       = fs.String("join-cluster-id", "", "with --join: the cluster's id (16 hex digits)")
		joinVoters   = fs.String("join-initial-voters", "", "with --join: the cluster's initial voters, comma-separated ids")
		forceNew     = fs.Bool("force-new-cluster", false, "RECOVERY after the permanent loss of a quorum: make this node the only voter of its cluster, every other member removed (docs/raftd.md, \"Guided recovery\"); raftd says what may be lost and refuses until --force-new-cluster-confirm names this cluster and node")
		forceConfirm = fs.String("force-new-cluster-confirm", "", "with --force-new-cluster: CLUSTER_ID/NODE_ID, as the refusal prints it: the operator's confirmation that the data loss it describes is accepted")
		walSyncMs    = fs.Int("wal-sync-ms", 0, "bound on the WAL's group-commit delay in ms (never a durability gap)")
		walSegment   = fs.Int64("wal-segment-bytes", 64<<20, "WAL segment file size; compaction frees whole segments (at least 4 MiB, a multiple of 4096)")
		traceDir     = fs.String("trace", "", "write the core's trace (ndjson) into this directory")
		tickMs       = fs.Int("tick-ms", 20, "protocol tick in ms (election timeout 10-20 ticks)")
		reqTimeout   = fs.Duration("request-timeout", 5*time.Second, "a client request's time limit")
		logFormat    = fs.String("log-format", "text", "text or json")
		logLevel     = fs.String("log-level", "info", "debug, info, warn or error")
		lossy        = fs.Bool("testing-lossy-fs", false, "TESTS ONLY: keep unsynced writes in memory (kill -9 loses them)")
		syncMs       = fs.Int("testing-sync-ms", 0, "TESTS ONLY, with --testing-lossy-fs: every fdatasync takes this long (a slow device)")
		checkEvery   = fs.Uint64("state-check-every", 1000, "compare the KV state hash across members at every multiple of this index")
		divergeAt    = fs.Uint64("testing-diverge-at", 0, "TESTS ONLY: from this index on, this node's recorded state hashes differ (a planted divergent member)")
		failSync     = fs.String("testing-fail-sync-file", "", "TESTS ONLY, with --testing-lossy-fs: while this file exists every fdatasync fails with EIO (a failing disk)")
		bugs         = fs.String("testing-bugs", "", "TESTS ONLY: comma-separated core or replica bug switches")
		snapEntries  = fs.Uint64("snapshot-entries", 100000, "snapshot the KV store and compact the log once this many entries were applied since the last snapshot (0: no entry threshold; a snapshot costs a pass over the whole state)")
		snapBytes    = fs.Uint64("snapshot-bytes", 64<<20, "... or once this many bytes of entry data were (0: no byte threshold; both 0: never compact)")
		snapKeep     = fs.Uint64("snapshot-keep-entries", 0, "entries kept in the log below a snapshot, for followers a little behind (0: a quarter of --snapshot-entries)")
		snapChunk    = fs.Int("snapshot-chunk-bytes", 64<<10, "a snapshot transfer's chunk and the snapshot file's block, 4 KiB..512 KiB")
		pprofAddr    = fs.String("pprof", "", "serve Go's profiles (/debug/pprof/) on this loopback address")
	)
	sec := addSecurityFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := sec.check(); err != nil {
		fmt.Fprintln(stderr, "raftd:", err)
		return 2
	}
	logger, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "raftd:", err)
		return 2
	}
	if *id == 0 || *data == "" {
		fmt.Fprintln(stderr, "raftd: --id and --data are required")
		fs.Usage()
		return 2
	}
	if *walSegment < server.WALSegmentBytesMin || *walSegment%4096 != 0 {
		fmt.Fprintf(stderr, "raftd: --wal-segment-bytes must be at least %d and a multiple of 4096\n", server.WALSegmentBytesMin)
		return 2
	}
	if *snapChunk < 4<<10 || *snapChunk > 512<<10 {
		fmt.Fprintln(stderr, "raftd: --snapshot-chunk-bytes must be 4096..524288")
		return 2
	}
	cfg := server.Config{ID: raft.NodeID(*id), DataDir: *data, ClientAddr: *listenClient, PeerAddr: *listenPeer,
		AdvertiseClient: *advertise, ClusterToken: *token, WALSyncDelay: time.Duration(*walSyncMs) * time.Millisecond, WALSegmentBytes: *walSegment,
		TraceDir: *traceDir, TickInterval: time.Duration(*tickMs) * time.Millisecond, RequestTimeout: *reqTimeout, Logger: logger,
		StateCheckEvery: *checkEvery, TestingDivergeAt: *divergeAt,
		Snapshot: server.SnapshotConfig{Entries: *snapEntries, Bytes: *snapBytes, KeepEntries: *snapKeep, ChunkBytes: *snapChunk}}
	if *peers != "" {
		if cfg.InitialPeers, err = server.ParsePeers(*peers); err != nil {
			fmt.Fprintln(stderr, "raftd:", err)
			return 2
		}
	}
	switch {
	case *join:
		if cfg.Join, err = server.ParseJoin(*joinID, *joinVoters); err != nil {
			fmt.Fprintln(stderr, "raftd: --join:", err)
			return 2
		}
	case *joinID != "" || *joinVoters != "":
		fmt.Fprintln(stderr, "raftd: --join-cluster-id and --join-initial-voters need --join")
		return 2
	}
	if *forceConfirm != "" && !*forceNew {
		fmt.Fprintln(stderr, "raftd: --force-new-cluster-confirm needs --force-new-cluster")
		return 2
	}
	cfg.ForceNewCluster, cfg.ForceNewClusterConfirm = *forceNew, *forceConfirm
	if (*syncMs != 0 || *failSync != "") && !*lossy {
		fmt.Fprintln(stderr, "raftd: --testing-sync-ms and --testing-fail-sync-file need --testing-lossy-fs")
		return 2
	}
	if *lossy {
		lfs := lossyfs.New()
		lfs.SyncLatency = time.Duration(*syncMs) * time.Millisecond
		lfs.FailSyncFile = *failSync
		cfg.FS, cfg.TestingLossyFS, cfg.TestingFailSyncFile = lfs, true, *failSync
	}
	if cfg.TestingCoreBugs, cfg.TestingReplicaBugs, cfg.TestingNoPreVote, err = parseBugs(*bugs); err != nil {
		fmt.Fprintln(stderr, "raftd:", err)
		return 2
	}
	if err := sec.apply(&cfg, logger); err != nil {
		logger.Error("raftd: cannot start", "err", err)
		return 1
	}
	if *pprofAddr != "" {
		if err := servePprof(*pprofAddr, logger); err != nil {
			fmt.Fprintln(stderr, "raftd:", err)
			return 2
		}
	}
	n, err := server.Open(cfg)
	if err != nil {
		logger.Error("raftd: cannot start", "err", err)
		return 1
	}
	// Signals are caught before the ready line: a script that stops the
	// node the moment it reads the line gets a clean stop.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	n.Start()
	// The one line a script or test waits for.
	fmt.Fprintf(os.Stdout, "raftd: node %d serving client=%s peer=%s\n", *id, n.ClientAddr(), n.PeerAddr())
	s := <-sig
	logger.Info("raftd: stopping", "signal", s.String())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		logger.Error("raftd: stopped with an error", "err", err)
		return 1
	}
	return 0
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: text or json", format)
}

// parseBugs splits names between the core's switches, the replica's and
// the server's (no-pre-vote: the core's PreVote off).
func parseBugs(s string) (raft.Bug, replica.Bug, bool, error) {
	var core raft.Bug
	var rep replica.Bug
	noPreVote := false
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if name == "no-pre-vote" {
			noPreVote = true
			continue
		}
		if b, err := raft.ParseBugs(name); err == nil {
			core |= b
			continue
		}
		found := false
		for _, b := range replica.AllBugs() {
			if b.String() == name {
				rep |= b
				found = true
			}
		}
		if !found {
			return 0, 0, false, errors.New("--testing-bugs: unknown switch " + name)
		}
	}
	return core, rep, noPreVote, nil
}
