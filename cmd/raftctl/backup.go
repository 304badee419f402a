package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/server"
)

// backup fetches a consistent snapshot of the cluster (GET /v1/backup,
// admin) into FILE: written to FILE.tmp, fdatasync'd, read back and
// verified whole, renamed, the directory synced. The first endpoint that
// answers serves it (a follower forwards to the leader).
func (e *env) backup(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(e.err, "raftctl backup FILE")
		return 2
	}
	file := args[0]
	var last error
	for _, ep := range e.endpoints {
		res, err := e.backupFrom(ep, file)
		if err == nil {
			fmt.Fprintf(e.out, "backup %s: index %d, term %d, %d keys, state hash %s (from %s)\n", file, res.Index, res.Term, res.Keys, res.Hash, ep)
			return 0
		}
		fmt.Fprintf(e.err, "raftctl: backup from %s: %v\n", ep, err)
		last = err
	}
	return e.exit(fmt.Errorf("no endpoint gave a backup: %w", last))
}

func (e *env) backupFrom(ep, file string) (server.Restored, error) {
	var res server.Restored
	req, err := http.NewRequestWithContext(context.Background(), "GET", e.scheme()+"://"+ep+"/v1/backup", nil)
	if err != nil {
		return res, err
	}
	t := e.httpTransport(1)
	t.ResponseHeaderTimeout = e.timeout // the stream itself may take longer
	resp, err := (&http.Client{Transport: t}).Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return res, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return res, err
	}
	defer os.Remove(tmp) // gone after the rename; removed on any failure
	_, err = io.Copy(f, resp.Body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("writing %s: %w", tmp, err)
	}
	if res, err = verifyFile(tmp); err != nil {
		return res, fmt.Errorf("the backup received does not verify (nothing kept): %w", err)
	}
	if h := resp.Header.Get("X-Raftd-Hash"); h != res.Hash {
		return res, fmt.Errorf("the backup's state hash %s differs from the one the node announced, %s", res.Hash, h)
	}
	if err := os.Rename(tmp, file); err != nil {
		return res, err
	}
	return res, syncDir(filepath.Dir(file))
}

func verifyFile(path string) (server.Restored, error) {
	f, err := os.Open(path)
	if err != nil {
		return server.Restored{}, err
	}
	defer f.Close()
	return server.VerifyBackup(f)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// restore prepares one member's data directory of a new cluster from a
// backup (server.RestoreMember); run it for every member with the same
// --peers and --cluster-token, then start raftd on each directory.
func (e *env) restore(args []string) int {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(e.err)
	id := fs.Uint64("id", 0, "the new member's id (required; one of --peers)")
	data := fs.String("data", "", "its data directory, empty or absent (required)")
	peers := fs.String("peers", "", "the new cluster's peer addresses, id=host:port,... (required)")
	token := fs.String("cluster-token", "durableraft", "as raftd's; enters the new cluster's id with the backup's state hash")
	segment := fs.Int64("wal-segment-bytes", 0, "as raftd's (0: the default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *id == 0 || *data == "" || *peers == "" {
		fmt.Fprintln(e.err, "raftctl restore --id N --data DIR --peers 1=h:p,... [--cluster-token T] BACKUP")
		return 2
	}
	m, err := server.ParsePeers(*peers)
	if err != nil {
		fmt.Fprintln(e.err, "raftctl restore:", err)
		return 2
	}
	res, err := server.RestoreMember(server.RestoreConfig{ID: raft.NodeID(*id), DataDir: *data, Peers: m, ClusterToken: *token,
		WALSegmentBytes: *segment, Backup: fs.Arg(0), Logger: slog.New(slog.NewTextHandler(e.err, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return e.exit(err)
	}
	fmt.Fprintf(e.out, "restored %s as node %d of cluster %s: index %d, term %d, %d keys, state hash %s\n",
		*data, *id, res.ClusterID, res.Index, res.Term, res.Keys, res.Hash)
	fmt.Fprintf(e.out, "start it with: raftd --id %d --data %s --listen-peer %s ...\n", *id, *data, m[raft.NodeID(*id)])
	return 0
}
