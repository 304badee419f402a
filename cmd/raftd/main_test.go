package main

import (
	"bytes"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

func TestParseBugs(t *testing.T) {
	core, rep, noPV, err := parseBugs("follower-acks-appended, no-chain-check,self-counts-appended")
	if err != nil || core != raft.BugFollowerAcksAppended|raft.BugSelfCountsAppended || rep != replica.BugNoChainCheck || noPV {
		t.Fatalf("%v %v %v %v", core, rep, noPV, err)
	}
	if _, _, noPV, err := parseBugs("no-pre-vote"); err != nil || !noPV {
		t.Fatalf("no-pre-vote: %v %v", noPV, err)
	}
	if _, _, _, err := parseBugs("no-such-bug"); err == nil {
		t.Fatal("an unknown switch accepted")
	}
}

// TestUsage: the flags a node cannot start without, and bad values, are
// refused with status 2 and a message, before anything is opened.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--id", "1"},
		{"--data", t.TempDir()},
		{"--id", "1", "--data", t.TempDir(), "--peers", "1=a,x"},
		{"--id", "1", "--data", t.TempDir(), "--testing-bugs", "nope"},
		{"--id", "1", "--data", t.TempDir(), "--log-format", "xml"},
		{"--id", "1", "--data", t.TempDir(), "--testing-fail-sync-file", "eio"},
		{"--id", "1", "--data", t.TempDir(), "--testing-sync-ms", "5"},
		{"--id", "1", "--data", t.TempDir(), "--snapshot-chunk-bytes", "100"},
		{"--id", "1", "--data", t.TempDir(), "--snapshot-entries", "-1"},
		{"--id", "1", "--data", t.TempDir(), "--wal-segment-bytes", "65536"},
		{"--no-such-flag"},
		{"--id", "4", "--data", t.TempDir(), "--join"},
		{"--id", "4", "--data", t.TempDir(), "--join", "--join-cluster-id", "12", "--join-initial-voters", "1,2,3"},
		{"--id", "4", "--data", t.TempDir(), "--join", "--join-cluster-id", "00000000000000ab", "--join-initial-voters", "1,x"},
		{"--id", "4", "--data", t.TempDir(), "--join-cluster-id", "00000000000000ab"},
		{"--id", "1", "--data", t.TempDir(), "--tls-ca", "ca.crt"},
		{"--id", "1", "--data", t.TempDir(), "--tls-ca", "a", "--tls-cert", "b", "--tls-key", "c", "--insecure"},
	} {
		var stderr bytes.Buffer
		if code := run(args, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}

// TestFirstBootNeedsPeers: without --peers and without a cluster file
// the node refuses to start (status 1, a log line).
func TestFirstBootNeedsPeers(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"--id", "1", "--data", t.TempDir(), "--listen-client", "127.0.0.1:0", "--listen-peer", "127.0.0.1:0"}, &stderr); code != 1 ||
		!bytes.Contains(stderr.Bytes(), []byte("--peers is required")) {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// TestNonLoopbackNeedsTLS: without TLS flags raftd refuses to listen
// beyond loopback (status 1) and says why and what to do; --insecure
// lets it.
func TestNonLoopbackNeedsTLS(t *testing.T) {
	for _, args := range [][]string{
		{"--listen-client", "0.0.0.0:0", "--listen-peer", "127.0.0.1:0"},
		{"--listen-client", "127.0.0.1:0", "--listen-peer", ":0"},
	} {
		var stderr bytes.Buffer
		args = append([]string{"--id", "1", "--data", t.TempDir(), "--peers", "1=127.0.0.1:1"}, args...)
		if code := run(args, &stderr); code != 1 || !bytes.Contains(stderr.Bytes(), []byte("and TLS is off")) ||
			!bytes.Contains(stderr.Bytes(), []byte("--insecure")) {
			t.Errorf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	var stderr bytes.Buffer
	args := []string{"--id", "1", "--data", t.TempDir(), "--tls-ca", "/nonexistent/ca.crt", "--tls-cert", "/nonexistent/c", "--tls-key", "/nonexistent/k"}
	if code := run(args, &stderr); code != 1 || !bytes.Contains(stderr.Bytes(), []byte("/nonexistent/ca.crt")) {
		t.Errorf("missing TLS files: exit %d: %s", code, stderr.String())
	}
}

// TestJoinAsInitialVoter: --join naming this node among the initial
// voters is refused at the first boot (it bootstraps; it does not join).
func TestJoinAsInitialVoter(t *testing.T) {
	var stderr bytes.Buffer
	args := []string{"--id", "1", "--data", t.TempDir(), "--listen-client", "127.0.0.1:0", "--listen-peer", "127.0.0.1:0",
		"--peers", "1=127.0.0.1:1,2=127.0.0.1:2", "--join", "--join-cluster-id", "00000000000000ab", "--join-initial-voters", "1,2"}
	if code := run(args, &stderr); code != 1 || !bytes.Contains(stderr.Bytes(), []byte("it does not join")) {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
