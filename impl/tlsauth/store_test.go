package tlsauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuf is a concurrency-safe log sink the tests read.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) count(s string) int { return strings.Count(l.String(), s) }

func newLog() (*slog.Logger, *logBuf) {
	b := &logBuf{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// pki is a CA in a temporary directory.
type pki struct {
	t   *testing.T
	dir string
	ca  *Authority
}

const testCluster = 0xc1

func newPKI(t *testing.T, cluster uint64) *pki {
	t.Helper()
	ca, err := NewAuthority(cluster, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{t: t, dir: t.TempDir(), ca: ca}
	if err := ca.Write(p.dir); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pki) node(id uint64) Files {
	p.t.Helper()
	f := NodeFiles(p.dir, id)
	if err := p.ca.IssueFiles(f, NodeIdentity(p.ca.Cluster, id), []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		p.t.Fatal(err)
	}
	return f
}

func (p *pki) client(name string, r Role) Files {
	p.t.Helper()
	f := ClientFiles(p.dir, name)
	if err := p.ca.IssueFiles(f, ClientIdentity(p.ca.Cluster, name, r), nil, time.Hour); err != nil {
		p.t.Fatal(err)
	}
	return f
}

func open(t *testing.T, f Files, log *slog.Logger) *Store {
	t.Helper()
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := Open(f, log)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpen(t *testing.T) {
	p := newPKI(t, testCluster)
	f := p.node(2)
	s := open(t, f, nil)
	if s.Identity() != NodeIdentity(testCluster, 2) {
		t.Fatalf("identity %v", s.Identity())
	}
	other := newPKI(t, testCluster)
	for name, bad := range map[string]Files{
		"another CA's bundle": {CA: other.dir + "/ca.crt", Cert: f.Cert, Key: f.Key},
		"another key":         {CA: f.CA, Cert: f.Cert, Key: p.client("x", RoleRead).Key},
		"the CA as the cert":  {CA: f.CA, Cert: f.CA, Key: p.dir + "/ca.key"},
		"a missing file":      {CA: f.CA, Cert: f.Cert + ".nope", Key: f.Key},
		"the cert as the CA":  {CA: f.Cert, Cert: f.Cert, Key: f.Key},
	} {
		if _, err := Open(bad, nil); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	// An expired certificate is refused.
	exp := NodeFiles(p.dir, 9)
	if err := p.ca.IssueFiles(exp, NodeIdentity(testCluster, 9), nil, -time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(exp, nil); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired certificate: %v", err)
	}
}

// TestReloadOnUse: a certificate replaced on disk is what the next look
// returns; no timer is involved, each look stats the files.
func TestReloadOnUse(t *testing.T) {
	p := newPKI(t, testCluster)
	f := p.node(1)
	log, logs := newLog()
	s := open(t, f, log)
	first := s.Serial()
	if s.Serial() != first || s.reloads.Load() != 0 {
		t.Fatal("a look without a change reloaded")
	}
	for k := 0; k < 3; k++ { // replacements in quick succession: inside the racy window
		prev := s.Serial()
		p.node(1)
		if got := s.Serial(); got == prev {
			t.Fatalf("replacement %d: still serial %s", k, got)
		}
	}
	if s.reloads.Load() != 3 || logs.count("credentials reloaded") != 3 {
		t.Fatalf("reloads %d, log:\n%s", s.reloads.Load(), logs)
	}
}

// TestReloadRefusesBadSets: a set that is not whole (a certificate whose
// key is not there yet, another identity, a certificate of a CA not in
// the bundle) leaves the set in use, logged once and counted; the next
// look after the files are right again reloads.
func TestReloadRefusesBadSets(t *testing.T) {
	p := newPKI(t, testCluster)
	f := p.node(1)
	log, logs := newLog()
	s := open(t, f, log)
	inUse := s.Serial()
	oldKey, _ := os.ReadFile(f.Key)

	// A new certificate, the old key: the rotation is half done.
	p.node(1)
	newKey, _ := os.ReadFile(f.Key)
	if err := WriteFile(f.Key, oldKey, 0o600); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 5; k++ {
		if s.Serial() != inUse {
			t.Fatal("a certificate without its key was taken")
		}
	}
	if n := logs.count("reload failed"); n != 1 || s.reloadFailures.Load() != 1 {
		t.Fatalf("%d failure lines, %d counted:\n%s", n, s.reloadFailures.Load(), logs)
	}
	if st := s.Status(); !strings.Contains(st.ReloadError, "private key does not match") {
		t.Fatalf("status %+v", st)
	}
	// The key arrives: the next look takes the set.
	if err := WriteFile(f.Key, newKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if s.Serial() == inUse || s.Status().ReloadError != "" {
		t.Fatal("the whole set was not taken")
	}
	inUse = s.Serial()

	// Another node's certificate at this path: a reload keeps identities.
	n2 := p.node(2)
	copyFile(t, n2.Cert, f.Cert)
	copyFile(t, n2.Key, f.Key)
	if s.Serial() != inUse || !strings.Contains(s.Status().ReloadError, "names node 2") {
		t.Fatalf("another identity taken: %+v", s.Status())
	}
	// A certificate of another CA: it does not chain to the bundle.
	q := newPKI(t, testCluster)
	q1 := q.node(1)
	copyFile(t, q1.Cert, f.Cert)
	copyFile(t, q1.Key, f.Key)
	if s.Serial() != inUse || !strings.Contains(s.Status().ReloadError, "does not verify against the CA bundle") {
		t.Fatalf("another CA's certificate taken: %+v", s.Status())
	}
	// And with that CA added to the bundle (a CA rotation), it is taken.
	bundle := append(append([]byte{}, p.ca.CertPEM...), q.ca.CertPEM...)
	if err := WriteFile(f.CA, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	if s.Serial() == inUse || len(s.Status().CAs) != 2 {
		t.Fatalf("the rotated set was not taken: %+v", s.Status())
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRacyStamp: a stamp is trusted only when the change time is older
// than the last read by racyWindow; otherwise the content decides. The
// stamps are made up here (a change time cannot be set back on disk).
func TestRacyStamp(t *testing.T) {
	p := newPKI(t, testCluster)
	s := open(t, p.node(1), nil)
	old := time.Now().Add(-time.Hour)
	fake := stamp{size: 7, ctime: old.UnixNano()}
	other := []byte("not the file's content")
	for _, r := range []struct {
		name    string
		readAt  time.Time
		content []byte
		changed bool
	}{
		{"old stamp, content differs: trusted", time.Now(), other, false},
		{"recent read of an old change: trusted", old.Add(racyWindow + time.Second), other, false},
		{"read within the window of the change, content differs", old.Add(time.Second), other, true},
		{"read within the window of the change, same content", old.Add(time.Second), nil, false},
	} {
		s.mu.Lock()
		content := r.content
		if content == nil {
			content = append([]byte{}, s.files[1].content...)
		}
		saved := s.files[1]
		s.files[1] = seen{stamp: fake, content: content, readAt: r.readAt}
		got := s.changedLocked(1, fake)
		s.files[1] = saved
		s.mu.Unlock()
		if got != r.changed {
			t.Errorf("%s: changed=%v", r.name, got)
		}
	}
}

// foreignCert signs a certificate naming uri with p's CA key, outside
// Issue's checks (another cluster's identity from the same CA).
func foreignCert(t *testing.T, p *pki, uri string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, _ := newKey()
	u, _ := url.Parse(uri)
	sn, _ := serial()
	tmpl := &x509.Certificate{SerialNumber: sn, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, URIs: []*url.URL{u}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca.Cert, key.Public(), p.ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// pair runs one TLS handshake between a listener configured by server and
// a dialer configured by client, over loopback; it returns both sides'
// errors and connections (closed at the test's end).
func pair(t *testing.T, server, client *tls.Config) (srv, cli *tls.Conn, srvErr, cliErr error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			srvErr = err
			return
		}
		srv = tls.Server(c, server)
		srvErr = srv.HandshakeContext(context.Background())
		if srvErr == nil {
			_, srvErr = srv.Write([]byte{1}) // the client's read sees a refusal of its certificate
		}
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cli = tls.Client(raw, client)
	cliErr = cli.HandshakeContext(context.Background())
	if cliErr == nil {
		var b [1]byte
		_ = cli.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, cliErr = cli.Read(b[:])
	}
	<-done
	t.Cleanup(func() {
		cli.Close()
		if srv != nil {
			srv.Close()
		}
	})
	return srv, cli, srvErr, cliErr
}

// TestAuthority: a CA written to disk loads back naming its cluster, and
// issues only for it.
func TestAuthority(t *testing.T) {
	p := newPKI(t, testCluster)
	a, err := LoadAuthority(p.dir+"/"+CACertFile, p.dir+"/"+CAKeyFile)
	if err != nil || a.Cluster != testCluster {
		t.Fatalf("%v %v", a, err)
	}
	if _, _, err := a.Issue(NodeIdentity(0xc2, 1), nil, time.Hour); err == nil {
		t.Error("issued for another cluster")
	}
	if _, _, err := a.Issue(ClientIdentity(testCluster, "x", RoleRead), []string{"h"}, time.Hour); err == nil {
		t.Error("a client certificate with hosts")
	}
	if _, _, err := a.Issue(ClientIdentity(testCluster, "bad name", RoleRead), nil, time.Hour); err == nil {
		t.Error("an invalid name issued")
	}
	if _, err := LoadAuthority(NodeFiles(p.dir, 1).Cert, p.dir+"/"+CAKeyFile); err == nil {
		t.Error("a missing file loaded")
	}
	f := p.node(1)
	if _, err := LoadAuthority(f.Cert, f.Key); err == nil {
		t.Error("a node's certificate loaded as a CA")
	}
	if fi, err := os.Stat(f.Key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v %v", fi.Mode(), err)
	}
}
