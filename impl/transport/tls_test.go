package transport

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/tlsauth"
)

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

// testPKI is a cluster CA in a directory, issuing on demand.
type testPKI struct {
	t   *testing.T
	dir string
	ca  *tlsauth.Authority
}

func newTestPKI(t *testing.T, cluster uint64) *testPKI {
	t.Helper()
	ca, err := tlsauth.NewAuthority(cluster, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{t: t, dir: t.TempDir(), ca: ca}
	if err := ca.Write(p.dir); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *testPKI) store(id tlsauth.Identity, base string) *tlsauth.Store {
	p.t.Helper()
	f := tlsauth.Files{CA: filepath.Join(p.dir, tlsauth.CACertFile), Cert: filepath.Join(p.dir, base+".crt"), Key: filepath.Join(p.dir, base+".key")}
	if err := p.ca.IssueFiles(f, id, nil, time.Hour); err != nil {
		p.t.Fatal(err)
	}
	s, err := tlsauth.Open(f, quiet)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

func (p *testPKI) node(id uint64) *tlsauth.Store {
	return p.store(tlsauth.NodeIdentity(p.ca.Cluster, id), fmt.Sprintf("node-%d", id))
}

// withTLS makes cfg's listener, dialer and identity check mutual TLS from s.
func withTLS(cfg *Config, s *tlsauth.Store) {
	cfg.Listener = tls.NewListener(cfg.Listener, s.ServerConfig(tlsauth.RequireCert))
	cfg.Dial = s.Dialer(time.Second, nil)
	cfg.Authenticate = func(c net.Conn, peer raft.NodeID) error { return s.CheckPeer(c, uint64(peer)) }
}

// TestTLSDelivery: a cluster over mutual TLS delivers as over TCP, and
// learns its peers' client addresses.
func TestTLSDelivery(t *testing.T) {
	p := newTestPKI(t, 0xc1)
	ns := cluster(t, []raft.NodeID{1, 2, 3}, func(c *Config) { withTLS(c, p.node(uint64(c.ID))) })
	for _, to := range []raft.NodeID{2, 3} {
		ns[1].tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: to, Term: 1}}})
	}
	ns[3].tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 3, To: 1, Term: 1}}})
	for _, id := range []raft.NodeID{1, 2, 3} {
		waitFor(t, "delivery", ns[id].in.changed, func() bool { return ns[id].in.count() == 1 })
	}
	if got := ns[1].tr.ClientAddr(2); got != "client-"+ns[2].tr.Addr().String() {
		t.Fatalf("client address of 2: %q", got)
	}
	for _, id := range []raft.NodeID{1, 2, 3} {
		if st := ns[id].tr.Stats().Snapshot(); st.TLSHandshakesFailed != 0 || st.IdentityRefused != 0 {
			t.Fatalf("node %d: %+v", id, st)
		}
	}
}

// TestTLSRefusals: what a member refuses on its peer port, each with a log
// line on its side and an error the dialer sees (its LastError).
func TestTLSRefusals(t *testing.T) {
	p := newTestPKI(t, 0xc1)
	other := newTestPKI(t, 0xc1) // another CA, even of a cluster with the same id
	targetLog := &logBuf{}
	ns := cluster(t, []raft.NodeID{1, 2, 3}, func(c *Config) {
		withTLS(c, p.node(uint64(c.ID)))
		if c.ID == 2 {
			c.Logger = slog.New(slog.NewTextHandler(targetLog, nil))
		}
	})
	target := ns[2].tr
	// An impostor of another CA that trusts this cluster's CA as well.
	other.node(1) // issues other.dir/node-1.{crt,key}
	bothFile := filepath.Join(other.dir, "both.crt")
	if err := os.WriteFile(bothFile, append(append([]byte{}, p.ca.CertPEM...), other.ca.CertPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	impostorCA, err := tlsauth.Open(tlsauth.Files{CA: bothFile, Cert: filepath.Join(other.dir, "node-1.crt"), Key: filepath.Join(other.dir, "node-1.key")}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	node3 := p.node(3) // node 3's valid certificate, in the hands of a dialer claiming node 1
	client := p.store(tlsauth.ClientIdentity(0xc1, "w", tlsauth.RoleWrite), "client-w")
	rows := []struct {
		name      string
		store     *tlsauth.Store // nil: plain TCP
		targetLog string         // on the acceptor's side
		dialerErr string         // what the dialer is told
		counter   func() uint64
	}{
		{"a certificate of another CA", impostorCA, "the TLS handshake failed", "unknown certificate authority", target.Stats().TLSHandshakesFailed.Load},
		{"node 3's certificate claiming node 1", node3, "names node 3, not node 1", "handshake refused by peer 2: the hello claims node 1: tlsauth: the TLS certificate names node 3, not node 1", target.Stats().IdentityRefused.Load},
		{"a client's certificate", client, "cannot speak as a member", "cannot speak as a member", target.Stats().IdentityRefused.Load},
		{"no TLS", nil, "first record does not look like a TLS handshake", "handshake", target.Stats().TLSHandshakesFailed.Load},
	}
	for _, r := range rows {
		before := r.counter()
		l := listen(t)
		cfg := Config{ID: 1, ClusterID: 0xc1, Peers: map[raft.NodeID]string{1: l.Addr().String(), 2: target.Addr().String()},
			Listener: l, Deliver: func(replica.Message) {}, Logger: quiet}
		if r.store != nil {
			withTLS(&cfg, r.store)
			cfg.Authenticate = nil // an impostor does not check whom it reached
		}
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr.Start()
		waitFor(t, r.name, nil, func() bool {
			ps := tr.Peers()
			return r.counter() > before && strings.Contains(ps[0].LastError, r.dialerErr) && targetLog.has(r.targetLog)
		})
		if ps := tr.Peers(); ps[0].Connected {
			t.Fatalf("%s: connected", r.name)
		}
		tr.Close()
	}
	if ns[2].in.count() != 0 {
		t.Fatal("a refused peer's message was delivered")
	}
}

// TestTLSDialerRefuses: node 1 dials "node 2" and finds node 3's
// certificate there (a listener at node 2's address with node 3's valid
// certificate): the dialer refuses it before its hello, and logs it.
func TestTLSDialerRefuses(t *testing.T) {
	p := newTestPKI(t, 0xc1)
	node3 := p.node(3)
	l := listen(t)
	imp := tls.NewListener(l, node3.ServerConfig(tlsauth.RequireCert))
	go func() {
		for {
			c, err := imp.Accept()
			if err != nil {
				return
			}
			go func() { b := make([]byte, 1); c.Read(b); c.Close() }()
		}
	}()
	defer imp.Close()
	dialerLog := &logBuf{}
	self := listen(t)
	cfg := Config{ID: 1, ClusterID: 0xc1, Peers: map[raft.NodeID]string{1: self.Addr().String(), 2: l.Addr().String()},
		Listener: self, Deliver: func(replica.Message) {}, Logger: slog.New(slog.NewTextHandler(dialerLog, nil))}
	withTLS(&cfg, p.node(1))
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr.Start()
	defer tr.Close()
	waitFor(t, "the dialer refuses the impostor acceptor", nil, func() bool {
		return dialerLog.has("cannot reach peer") && strings.Contains(tr.Peers()[0].LastError, "is not node 2: tlsauth: the TLS certificate names node 3, not node 2") &&
			tr.Stats().IdentityRefused.Load() > 0
	})
}
