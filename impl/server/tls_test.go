package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/tlsauth"
)

// logBuf is a log sink the tests read (and echo with RAFTD_TEST_LOG).
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if os.Getenv("RAFTD_TEST_LOG") != "" {
		os.Stderr.Write(p)
	}
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// tlsCluster is a testCluster over mutual TLS, with a CA that issues on
// demand and each node's log kept.
type tlsCluster struct {
	*testCluster
	t    *testing.T // set before the embedded cluster is
	dir  string     // the nodes' files
	cdir string     // the test clients' (a member's certificate among them)
	ca   *tlsauth.Authority
	logs map[raft.NodeID]*logBuf
}

func newTLSCluster(t *testing.T, size int, edits ...func(*Config)) *tlsCluster {
	t.Helper()
	tc := &tlsCluster{t: t, dir: t.TempDir(), cdir: t.TempDir(), logs: map[raft.NodeID]*logBuf{}}
	for id := raft.NodeID(1); id <= raft.NodeID(size); id++ {
		tc.logs[id] = &logBuf{}
	}
	var once sync.Once
	tc.testCluster = newTestCluster(t, size, func(c *Config) {
		once.Do(func() { // the cluster id is known once the ports are
			var err error
			if tc.ca, err = tlsauth.NewAuthority(ClusterID(c.InitialPeers, c.ClusterToken), time.Hour); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{tc.dir, tc.cdir} {
				if err := tc.ca.Write(d); err != nil {
					t.Fatal(err)
				}
			}
		})
		c.TLS = tc.issueIn(tc.dir, tlsauth.NodeIdentity(tc.ca.Cluster, uint64(c.ID)))
		c.Logger = slog.New(slog.NewTextHandler(tc.logs[c.ID], nil))
		for _, e := range edits {
			e(c)
		}
	})
	return tc
}

func filesOf(dir string, id tlsauth.Identity) tlsauth.Files {
	if id.Kind == tlsauth.KindNode {
		return tlsauth.NodeFiles(dir, id.Node)
	}
	return tlsauth.ClientFiles(dir, id.Name)
}

// issue issues id's certificate for a test client and opens it.
func (tc *tlsCluster) issue(id tlsauth.Identity) *tlsauth.Store { return tc.issueIn(tc.cdir, id) }

func (tc *tlsCluster) issueIn(dir string, id tlsauth.Identity) *tlsauth.Store {
	tc.t.Helper()
	f := filesOf(dir, id)
	var hosts []string
	if id.Kind == tlsauth.KindNode {
		hosts = []string{"127.0.0.1"}
	}
	if err := tc.ca.IssueFiles(f, id, hosts, time.Hour); err != nil {
		tc.t.Fatal(err)
	}
	return tc.open(f)
}

func (tc *tlsCluster) open(f tlsauth.Files) *tlsauth.Store {
	tc.t.Helper()
	s, err := tlsauth.Open(f, quiet)
	if err != nil {
		tc.t.Fatal(err)
	}
	return s
}

func (tc *tlsCluster) client(name string, r tlsauth.Role) *tlsauth.Store {
	return tc.issue(tlsauth.ClientIdentity(tc.ca.Cluster, name, r))
}

// httpsClient speaks HTTPS with s's certificate (none when anonymous).
func httpsClient(s *tlsauth.Store, anonymous bool) *http.Client {
	cfg := s.ClientConfig(nil)
	if anonymous {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }
	}
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type tlsReply struct {
	reply
	code   string
	serial string // of the server's certificate
}

func (tc *tlsCluster) do(cl *http.Client, method string, id raft.NodeID, path, body string, hdr ...string) (tlsReply, error) {
	req, err := http.NewRequest(method, "https://"+tc.clients[id]+path, strings.NewReader(body))
	if err != nil {
		return tlsReply{}, err
	}
	for k := 0; k+1 < len(hdr); k += 2 {
		req.Header.Set(hdr[k], hdr[k+1])
	}
	resp, err := cl.Do(req)
	if err != nil {
		return tlsReply{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := tlsReply{reply: reply{status: resp.StatusCode, body: string(b), header: resp.Header}}
	var e errorBody
	if json.Unmarshal(b, &e) == nil {
		r.code = e.Code
	}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		r.serial = resp.TLS.PeerCertificates[0].SerialNumber.Text(16)
	}
	return r, nil
}

func (tc *tlsCluster) must(cl *http.Client, method string, id raft.NodeID, path, body string, hdr ...string) tlsReply {
	tc.t.Helper()
	r, err := tc.do(cl, method, id, path, body, hdr...)
	if err != nil {
		tc.t.Fatalf("%s %s on %d: %v", method, path, id, err)
	}
	return r
}

// eventually repeats a request answered 503 (an election under way, a
// read whose leadership changed: definite, retryable) for up to 10 s.
func (tc *tlsCluster) eventually(cl *http.Client, method string, id raft.NodeID, path, body string) tlsReply {
	tc.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := tc.must(cl, method, id, path, body)
		if r.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return r
		}
		time.Sleep(20 * time.Millisecond) // a retry's backoff, bounded by the deadline
	}
}

func (tc *tlsCluster) follower(lead raft.NodeID) raft.NodeID { return lead%3 + 1 }

// TestTLSRefusals: over mutual TLS, each refusal the issue lists, with the
// error the client sees and the log line on the node that refused; and
// what is allowed, through a follower too.
func TestTLSRefusals(t *testing.T) {
	tc := newTLSCluster(t, 3)
	lead := tc.leader()
	fol := tc.follower(lead)
	writer, reader, admin := httpsClient(tc.client("writer", tlsauth.RoleWrite), false), httpsClient(tc.client("reader", tlsauth.RoleRead), false),
		httpsClient(tc.client("ops", tlsauth.RoleAdmin), false)
	anonymous := httpsClient(tc.client("nobody", tlsauth.RoleRead), true)
	member := httpsClient(tc.issue(tlsauth.NodeIdentity(tc.ca.Cluster, uint64(fol))), false) // a certificate of the follower's

	// Allowed: writes through a follower (forwarded, the client's identity
	// passed on), reads, public paths without a certificate.
	if r := tc.eventually(writer, "PUT", fol, "/v1/kv/k", "v"); r.status != 200 {
		t.Fatalf("a write through the follower: %d %s", r.status, r.body)
	}
	lead = tc.leader()
	fol = tc.follower(lead)
	if r := tc.eventually(writer, "PUT", fol, "/v1/kv/k", "v"); r.status != 200 || r.header.Get(headerForwarded) == "" {
		t.Fatalf("a write through the follower: %d %s", r.status, r.body)
	}
	if r := tc.eventually(reader, "GET", fol, "/v1/kv/k", ""); r.status != 200 || r.body != "v" {
		t.Fatalf("a read: %d %s", r.status, r.body)
	}
	if r := tc.must(anonymous, "GET", lead, "/healthz", ""); r.status != 200 {
		t.Fatalf("healthz without a certificate: %d %s", r.status, r.body)
	}
	if r := tc.eventually(writer, "PUT", fol, "/v1/kv/r?redirect=true", "v"); r.status != 307 ||
		!strings.HasPrefix(r.header.Get("Location"), "https://127.0.0.1:") || !strings.HasSuffix(r.header.Get("Location"), "/v1/kv/r?redirect=true") {
		t.Fatalf("redirect: %d %v", r.status, r.header)
	}

	rows := []struct {
		name    string
		cl      *http.Client
		method  string
		at      raft.NodeID
		path    string
		body    string
		hdr     []string
		status  int
		code    string
		logAt   raft.NodeID // the node whose log says so
		logLine string
	}{
		{"no certificate", anonymous, "GET", lead, "/v1/kv/k", "", nil, 401, CodeUnauthenticated, lead, "a client certificate is required"},
		{"a reader writes", reader, "PUT", lead, "/v1/kv/k", "x", nil, 403, CodeForbidden, lead, "has the role read; this needs write"},
		{"a writer transfers", writer, "POST", lead, "/v1/transfer", fmt.Sprintf(`{"to":%d}`, fol), nil, 403, CodeForbidden, lead,
			"client writer (write) of cluster"},
		{"a writer transfers through a follower", writer, "POST", fol, "/v1/transfer", fmt.Sprintf(`{"to":%d}`, fol), nil, 403, CodeForbidden, fol,
			"has the role write; this needs admin"},
		{"a writer asks for a backup", writer, "GET", lead, "/v1/backup", "", nil, 403, CodeForbidden, lead,
			"has the role write; this needs admin"},
		{"a writer asks for a backup through a follower", writer, "GET", fol, "/v1/backup", "", nil, 403, CodeForbidden, fol,
			"has the role write; this needs admin"},
		{"a member's certificate as a client's", member, "GET", lead, "/v1/kv/k", "", nil, 403, CodeForbidden, lead,
			"a member's certificate is not a client certificate"},
		{"a member's certificate as a client's, at its own node", member, "PUT", fol, "/v1/kv/k", "x", nil, 403, CodeForbidden, fol,
			"a member's certificate is not a client certificate"},
		{"a client forging a forward", admin, "PUT", lead, "/v1/kv/k", "x", []string{headerForwarded, fmt.Sprint(fol), headerClient, "ops", headerClientRole, "admin"},
			403, CodeForbidden, lead, "accepted only from a member, not from a client"},
		{"a member forwarding as another", member, "PUT", lead, "/v1/kv/k", "x", []string{headerForwarded, fmt.Sprint(6 - lead - fol), headerClient, "ops", headerClientRole, "admin"},
			403, CodeForbidden, lead, "forwards as node"},
	}
	for _, r := range rows {
		before := tc.logs[r.logAt].count("request refused")
		fwdBefore := tc.nodes[fol].stats.Forwarded.Load()
		got := tc.must(r.cl, r.method, r.at, r.path, r.body, r.hdr...)
		if got.status != r.status || got.code != r.code || !strings.Contains(got.body, `"outcome": "definite"`) {
			t.Errorf("%s: %d %s, want %d %s", r.name, got.status, got.body, r.status, r.code)
		}
		if tc.logs[r.logAt].count("request refused") != before+1 || tc.logs[r.logAt].count(r.logLine) == 0 {
			t.Errorf("%s: no log line %q on node %d", r.name, r.logLine, r.logAt)
		}
		if tc.nodes[fol].stats.Forwarded.Load() != fwdBefore {
			t.Errorf("%s: forwarded", r.name)
		}
	}
	// An admin's backup through a follower: forwarded with its role, the
	// whole stream relayed, and it verifies.
	if r := tc.eventually(admin, "GET", fol, "/v1/backup", ""); r.status != 200 || r.header.Get(headerForwarded) == "" {
		t.Fatalf("an admin's backup through a follower: %d %s", r.status, r.body)
	} else if got, err := VerifyBackup(strings.NewReader(r.body)); err != nil || got.Keys != 1 || r.header.Get(headerBackupHash) != got.Hash {
		t.Fatalf("the backup: %+v, %v (hash header %s)", got, err, r.header.Get(headerBackupHash))
	}
	// An admin transfers through a follower: forwarded with its role.
	if r := tc.eventually(admin, "POST", fol, "/v1/transfer", fmt.Sprintf(`{"to":%d}`, fol)); r.status != 200 {
		t.Fatalf("an admin's transfer through a follower: %d %s", r.status, r.body)
	}
	if got := tc.leader(); got != fol {
		t.Fatalf("leader %d after the transfer to %d", got, fol)
	}
	var st StatusBody
	if r := tc.eventually(reader, "GET", lead, "/v1/status", ""); r.status != 200 || json.Unmarshal([]byte(r.body), &st) != nil ||
		st.TLS == nil || st.Server["auth_refused"] == 0 {
		t.Fatalf("status: %d %+v", r.status, st.TLS)
	}
}

// TestTLSPipelined: the Go client over TLS: a writer writes and reads, a
// reader reads and is refused a write, a member's certificate and no
// certificate are refused; each refusal definite and logged.
func TestTLSPipelined(t *testing.T) {
	tc := newTLSCluster(t, 3)
	tc.leader()
	var eps []string
	for id := raft.NodeID(1); id <= 3; id++ {
		eps = append(eps, tc.clients[id])
	}
	newClient := func(s *tlsauth.Store, anonymous bool) *client.Client {
		dial := s.Dialer(time.Second, nil)
		if anonymous {
			dial = func(ctx context.Context, addr string) (net.Conn, error) {
				cfg := s.ClientConfig(nil)
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }
				return tls.Dial("tcp", addr, cfg)
			}
		}
		c, err := client.New(client.Config{Endpoints: eps, Dial: dial, Logger: quiet, RequestTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()
	w := newClient(tc.client("writer", tlsauth.RoleWrite), false)
	if _, err := w.Put(ctx, []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, _, ok, err := w.Get(ctx, []byte("k")); err != nil || !ok || string(v) != "v" {
		t.Fatalf("get: %q %v %v", v, ok, err)
	}
	r := newClient(tc.client("reader", tlsauth.RoleRead), false)
	if v, _, ok, err := r.Get(ctx, []byte("k")); err != nil || !ok || string(v) != "v" {
		t.Fatalf("a reader's get: %q %v %v", v, ok, err)
	}
	for _, row := range []struct {
		name string
		c    *client.Client
		code string
		line string
	}{
		{"a reader writes", r, CodeForbidden, "has the role read; this needs write"},
		{"a member's certificate", newClient(tc.issue(tlsauth.NodeIdentity(tc.ca.Cluster, 2)), false), CodeForbidden, "a member's certificate is not a client certificate"},
		{"no certificate", newClient(tc.client("nobody", tlsauth.RoleRead), true), CodeUnauthenticated, "a client certificate is required"},
	} {
		_, err := row.c.Put(ctx, []byte("k"), []byte(row.name))
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code != row.code {
			t.Errorf("%s: %v, want %s", row.name, err, row.code)
		}
		found := false
		for _, l := range tc.logs {
			found = found || l.count(row.line) > 0
		}
		if !found {
			t.Errorf("%s: no log line %q", row.name, row.line)
		}
	}
	if v, _, _, _ := w.Get(ctx, []byte("k")); string(v) != "v" {
		t.Fatalf("a refused write changed the key: %q", v)
	}
}

// TestTLSAnotherCA: a client whose certificate another CA signed (one that
// trusts this cluster's CA, so only the server can refuse) is refused at
// the handshake: the client is told, the node logs it.
func TestTLSAnotherCA(t *testing.T) {
	tc := newTLSCluster(t, 3)
	lead := tc.leader()
	other, err := tlsauth.NewAuthority(tc.ca.Cluster, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := tlsauth.ClientFiles(dir, "mallory")
	if err := other.IssueFiles(f, tlsauth.ClientIdentity(tc.ca.Cluster, "mallory", tlsauth.RoleAdmin), nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.CA, append(append([]byte{}, tc.ca.CertPEM...), other.CertPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = tc.do(httpsClient(tc.open(f), false), "GET", lead, "/v1/kv/k", "")
	if err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
		t.Fatalf("another CA's client: %v", err)
	}
	// The client reads the alert before the node's goroutine logs it: wait
	// for the line (bounded).
	for deadline := time.Now().Add(5 * time.Second); tc.logs[lead].count("the TLS handshake failed") == 0 ||
		tc.nodes[lead].stats.TLSHandshakesFailed.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the node did not log the refused handshake")
		}
	}
}

// TestTLSReload: node 1's certificate is replaced on disk: the next
// connection gets the new one, a connection made before keeps working,
// and the CA bundle, extended with a new CA, admits that CA's client on
// the next connection. No restart, no timer.
func TestTLSReload(t *testing.T) {
	tc := newTLSCluster(t, 3)
	tc.leader()
	reader := tc.client("reader", tlsauth.RoleRead)
	before := httpsClient(reader, false) // keeps its connection alive
	r0 := tc.must(before, "GET", 1, "/v1/status", "")
	oldSerial := r0.serial
	if r0.status != 200 || oldSerial == "" {
		t.Fatalf("%d %q", r0.status, oldSerial)
	}
	// A new certificate for node 1, written over the old one.
	if err := tc.ca.IssueFiles(tlsauth.NodeFiles(tc.dir, 1), tlsauth.NodeIdentity(tc.ca.Cluster, 1), []string{"127.0.0.1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	r1 := tc.must(httpsClient(reader, false), "GET", 1, "/v1/status", "")
	if r1.serial == oldSerial || r1.status != 200 {
		t.Fatalf("the next connection got serial %s (old %s)", r1.serial, oldSerial)
	}
	var st StatusBody
	if json.Unmarshal([]byte(r1.body), &st) != nil || st.TLS == nil || st.TLS.Serial != r1.serial || st.TLS.Reloads != 1 {
		t.Fatalf("status: %+v", st.TLS)
	}
	if r := tc.must(before, "GET", 1, "/v1/status", ""); r.status != 200 || r.serial != oldSerial {
		t.Fatalf("the connection made before: %d serial %s", r.status, r.serial)
	}
	// A CA rotation: the nodes' bundle gets a second CA; a client of that
	// CA, refused before, is admitted on its next connection.
	next, err := tlsauth.NewAuthority(tc.ca.Cluster, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := tlsauth.ClientFiles(dir, "new")
	if err := next.IssueFiles(f, tlsauth.ClientIdentity(tc.ca.Cluster, "new", tlsauth.RoleRead), nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	bundle := append(append([]byte{}, tc.ca.CertPEM...), next.CertPEM...)
	if err := os.WriteFile(f.CA, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	newClient := httpsClient(tc.open(f), false)
	if _, err := tc.do(newClient, "GET", 1, "/v1/kv/k", ""); err == nil {
		t.Fatal("the new CA's client admitted before the rotation")
	}
	if err := tlsauth.WriteFile(filepath.Join(tc.dir, tlsauth.CACertFile), bundle, 0o644); err != nil { // every node's bundle
		t.Fatal(err)
	}
	for id := raft.NodeID(1); id <= 3; id++ {
		if r, err := tc.do(newClient, "GET", id, "/v1/kv/k", ""); err != nil || r.status != 404 {
			t.Fatalf("the new CA's client after the rotation, on node %d: %v %+v", id, err, r)
		}
	}
	// The members still talk (their connections, and new ones).
	w := httpsClient(tc.client("writer", tlsauth.RoleWrite), false)
	if r := tc.eventually(w, "PUT", tc.follower(tc.leader()), "/v1/kv/after", "v"); r.status != 200 {
		t.Fatalf("a write after the rotation: %d %s", r.status, r.body)
	}
}

// TestSafeBinds: without TLS a node listens on loopback only; another
// address is refused, saying why, unless Insecure. A certificate naming
// another node is refused at Open.
func TestSafeBinds(t *testing.T) {
	peers := map[raft.NodeID]string{1: "127.0.0.1:1"}
	listen := func(addr string) (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
	for _, r := range []struct {
		client, peer string
		insecure     bool
		bad          string
	}{
		{"0.0.0.0:0", "127.0.0.1:0", false, "--listen-client 0.0.0.0:0: 0.0.0.0 is not a loopback address, and TLS is off"},
		{"127.0.0.1:0", ":7101", false, "--listen-peer :7101: \":7101\" binds every interface, and TLS is off: anyone who reaches it could speak as a member"},
		{"10.1.2.3:0", "127.0.0.1:0", false, "or --insecure"},
		{"0.0.0.0:0", "0.0.0.0:0", true, ""},
		{"localhost:0", "[::1]:0", false, ""},
	} {
		n, err := Open(Config{ID: 1, DataDir: t.TempDir(), ClientAddr: r.client, PeerAddr: r.peer, InitialPeers: peers, Insecure: r.insecure,
			Logger: quiet, Listen: listen})
		if r.bad != "" {
			if err == nil || !strings.Contains(err.Error(), r.bad) {
				t.Errorf("%s %s: %v, want %q", r.client, r.peer, err, r.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", r.client, r.peer, err)
			continue
		}
		n.Start()
		if err := n.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
	// Node 2's certificate given to node 1.
	ca, err := tlsauth.NewAuthority(ClusterID(peers, ""), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := ca.Write(dir); err != nil {
		t.Fatal(err)
	}
	f := tlsauth.NodeFiles(dir, 2)
	if err := ca.IssueFiles(f, tlsauth.NodeIdentity(ca.Cluster, 2), nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	s, err := tlsauth.Open(f, quiet)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(Config{ID: 1, DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", InitialPeers: peers, TLS: s, Logger: quiet, Listen: listen})
	if err == nil || !strings.Contains(err.Error(), "names node 2 of cluster") {
		t.Fatalf("node 2's certificate on node 1: %v", err)
	}
}
