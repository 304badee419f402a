package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/server"
	"github.com/durableraft/durableraft/impl/tlsauth"
)

func raftctl(args ...string) (int, string, string) {
	var out, errw bytes.Buffer
	code := run(args, &out, &errw)
	return code, out.String(), errw.String()
}

// TestCert: raftctl cert makes a CA naming the cluster id raftd derives,
// refuses to replace it, issues node and client certificates that open
// as the identities asked for, and refuses bad roles and names.
func TestCert(t *testing.T) {
	dir := t.TempDir()
	peers := "1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103"
	if code, out, errw := raftctl("cert", "ca", "--dir", dir, "--peers", peers, "--cluster-token", "t"); code != 0 || !strings.Contains(out, "CA of cluster") {
		t.Fatalf("ca: %d %s %s", code, out, errw)
	}
	m, _ := server.ParsePeers(peers)
	cluster := server.ClusterID(m, "t")
	if code, _, errw := raftctl("cert", "ca", "--dir", dir, "--peers", peers); code != 1 || !strings.Contains(errw, "exists") {
		t.Fatalf("a second CA: %d %s", code, errw)
	}
	for _, args := range [][]string{
		{"node", "--dir", dir, "--id", "2", "--hosts", "raft2.example.com,10.0.0.2"},
		{"client", "--dir", dir, "--name", "ops", "--role", "admin"},
	} {
		if code, out, errw := raftctl(append([]string{"cert"}, args...)...); code != 0 {
			t.Fatalf("%v: %d %s %s", args, code, out, errw)
		}
	}
	for f, want := range map[tlsauth.Files]tlsauth.Identity{
		tlsauth.NodeFiles(dir, 2):       tlsauth.NodeIdentity(cluster, 2),
		tlsauth.ClientFiles(dir, "ops"): tlsauth.ClientIdentity(cluster, "ops", tlsauth.RoleAdmin),
	} {
		s, err := tlsauth.Open(f, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil || s.Identity() != want {
			t.Fatalf("%v: %v %v, want %v", f, s, err, want)
		}
	}
	code, out, _ := raftctl("cert", "show", tlsauth.NodeFiles(dir, 2).Cert, filepath.Join(dir, tlsauth.CACertFile))
	if code != 0 || !strings.Contains(out, fmt.Sprintf("node 2 of cluster %016x", cluster)) || !strings.Contains(out, "raft2.example.com") || !strings.Contains(out, "10.0.0.2") {
		t.Fatalf("show: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"cert", "client", "--dir", dir, "--name", "x", "--role", "root"},
		{"cert", "nope"},
		{"cert"},
		{"--cacert", "a", "status"},
	} {
		if code, _, _ := raftctl(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	for _, args := range [][]string{
		{"cert", "client", "--dir", dir, "--name", "bad name", "--role", "read"},
		{"cert", "node", "--dir", dir, "--id", "0"},
		{"cert", "node", "--dir", t.TempDir(), "--id", "1"},
		{"cert", "ca", "--dir", t.TempDir()},
	} {
		if code, _, _ := raftctl(args...); code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
	}
}

// TestTLSCommands: raftctl's TLS flags against a one-node raftd with TLS:
// a writer puts and gets, is refused a transfer (forbidden, exit 1), and
// without the flags raftctl is not served.
func TestTLSCommands(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peer := l.Addr().String()
	l.Close()
	peers := "1=" + peer
	if code, _, errw := raftctl("cert", "ca", "--dir", dir, "--peers", peers); code != 0 {
		t.Fatal(errw)
	}
	for _, args := range [][]string{{"node", "--dir", dir, "--id", "1"}, {"client", "--dir", dir, "--name", "w", "--role", "write"}} {
		if code, _, errw := raftctl(append([]string{"cert"}, args...)...); code != 0 {
			t.Fatal(errw)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := tlsauth.Open(tlsauth.NodeFiles(dir, 1), quiet)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := server.ParsePeers(peers)
	n, err := server.Open(server.Config{ID: 1, DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: peer, InitialPeers: m,
		ClusterToken: "durableraft", TLS: st, Logger: quiet, TickInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n.Start()
	defer n.Shutdown(context.Background())
	w := tlsauth.ClientFiles(dir, "w")
	base := []string{"--endpoints", n.ClientAddr(), "--timeout", "10s", "--cacert", w.CA, "--cert", w.Cert, "--key", w.Key}
	if code, out, errw := raftctl(append(base, "put", "k", "v")...); code != 0 {
		t.Fatalf("put: %d %s %s", code, out, errw)
	}
	if code, out, errw := raftctl(append(base, "get", "k")...); code != 0 || out != "v\n" {
		t.Fatalf("get: %d %q %s", code, out, errw)
	}
	if code, out, _ := raftctl(append(base, "transfer", "1")...); code != 1 || !strings.Contains(out, `"code": "forbidden"`) {
		t.Fatalf("a writer's transfer: %d %s", code, out)
	}
	if code, out, errw := raftctl("--endpoints", n.ClientAddr(), "status"); code != 1 || !strings.Contains(out, "(400)") || !strings.Contains(out, "an HTTP request to an HTTPS server") {
		t.Fatalf("plain HTTP to a TLS node: %d %s %s", code, out, errw)
	}
}
