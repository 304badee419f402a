package tlsauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestHandshakes: the TLS handshakes a member's listener and dialer make,
// row by row: who presents what, what each side sees.
func TestHandshakes(t *testing.T) {
	p := newPKI(t, testCluster)
	other := newPKI(t, testCluster) // another CA (of a cluster with the same id, even)
	n1, n2 := open(t, p.node(1), nil), open(t, p.node(2), nil)
	alien := open(t, other.node(2), nil)
	// An impostor from another CA that trusts this cluster's CA too (its
	// certificate is public): only the acceptor can refuse it.
	both := other.node(3)
	both.CA = other.dir + "/both.crt"
	if err := WriteFile(both.CA, append(append([]byte{}, p.ca.CertPEM...), other.ca.CertPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	impostor := open(t, both, nil)
	writer := open(t, p.client("w", RoleWrite), nil)
	withCert := func(c tls.Certificate) *tls.Config {
		cfg := n2.ClientConfig(nil)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
		return cfg
	}
	rows := []struct {
		name           string
		server, client *tls.Config
		srvErr, cliErr string // "" when that side succeeds
	}{
		{"member to member", n1.ServerConfig(RequireCert), n2.ClientConfig(nil), "", ""},
		{"a client to the client port", n1.ServerConfig(VerifyCertIfGiven), writer.ClientConfig(nil), "", ""},
		{"no certificate, required", n1.ServerConfig(RequireCert), withNoCert(n2.ClientConfig(nil)), "client didn't provide a certificate", "certificate required"},
		{"no certificate, if given", n1.ServerConfig(VerifyCertIfGiven), withNoCert(n2.ClientConfig(nil)), "", ""},
		{"another CA's member dials", n1.ServerConfig(RequireCert), impostor.ClientConfig(nil), "certificate signed by unknown authority", "unknown certificate authority"},
		{"another CA's member dials the client port", n1.ServerConfig(VerifyCertIfGiven), impostor.ClientConfig(nil), "certificate signed by unknown authority", "unknown certificate authority"},
		{"another CA's member, not trusting ours", n1.ServerConfig(RequireCert), alien.ClientConfig(nil), "bad certificate", "does not verify against the CA bundle"},
		{"dialing another CA's member", alien.ServerConfig(RequireCert), n2.ClientConfig(nil), "bad certificate", "does not verify against the CA bundle"},
		{"a server with a client's certificate", writer.ServerConfig(RequireCert), n2.ClientConfig(nil), "bad certificate", "does not verify against the CA bundle"},
		{"a server of another cluster, same CA", serverWith(n1, foreignCert(t, p, "durableraft://00000000000000c2/node/1", x509.ExtKeyUsageServerAuth)),
			n2.ClientConfig(nil), "bad certificate", "this is cluster 00000000000000c1"},
		{"a server with no identity", serverWith(n1, foreignCert(t, p, "https://example.com/", x509.ExtKeyUsageServerAuth)),
			n2.ClientConfig(nil), "bad certificate", "names no durableraft identity"},
		{"the dialer's check refuses", n1.ServerConfig(RequireCert), n2.ClientConfig(func(id Identity) error {
			if id.Node != 3 {
				return errors.New("wanted node 3")
			}
			return nil
		}), "bad certificate", "wanted node 3"},
		{"TLS 1.2 offered", n1.ServerConfig(RequireCert), tls12(n2.ClientConfig(nil)), "unsupported versions", "protocol version"},
		{"a client's certificate of another cluster, same CA", n1.ServerConfig(RequireCert),
			withCert(foreignCert(t, p, "durableraft://00000000000000c2/client/admin/x", x509.ExtKeyUsageClientAuth)), "", ""},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			_, _, srvErr, cliErr := pair(t, r.server, r.client)
			check := func(side string, err error, want string) {
				if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
					t.Errorf("%s: %v, want %q", side, err, want)
				}
			}
			check("server", srvErr, r.srvErr)
			check("client", cliErr, r.cliErr)
		})
	}
}

func withNoCert(c *tls.Config) *tls.Config {
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }
	return c
}

func tls12(c *tls.Config) *tls.Config {
	c.MinVersion, c.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	return c
}

func serverWith(s *Store, cert tls.Certificate) *tls.Config {
	c := s.ServerConfig(RequireCert)
	inner := c.GetConfigForClient
	c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		cfg, err := inner(h)
		cfg.Certificates = []tls.Certificate{cert}
		return cfg, err
	}
	return c
}

// TestIdentifyAndCheckPeer: after the handshake each side reads the
// other's identity; CheckPeer holds a member to the node id it claims, and
// refuses a client's certificate and a client of another cluster.
func TestIdentifyAndCheckPeer(t *testing.T) {
	p := newPKI(t, testCluster)
	n1, n2 := open(t, p.node(1), nil), open(t, p.node(2), nil)
	srv, cli, srvErr, cliErr := pair(t, n1.ServerConfig(RequireCert), n2.ClientConfig(nil))
	if srvErr != nil || cliErr != nil {
		t.Fatal(srvErr, cliErr)
	}
	if err := n1.CheckPeer(srv, 2); err != nil {
		t.Errorf("the acceptor's check of node 2: %v", err)
	}
	if err := n1.CheckPeer(srv, 3); err == nil || !strings.Contains(err.Error(), "names node 2, not node 3") {
		t.Errorf("node 2's certificate claiming node 3: %v", err)
	}
	if err := n2.CheckPeer(cli, 1); err != nil {
		t.Errorf("the dialer's check of node 1: %v", err)
	}
	if id, ok, err := n2.Identify(cli.ConnectionState()); !ok || err != nil || id != NodeIdentity(testCluster, 1) {
		t.Errorf("the dialer identifies %v %v %v", id, ok, err)
	}
	w := open(t, p.client("w", RoleWrite), nil)
	srv, _, srvErr, cliErr = pair(t, n1.ServerConfig(RequireCert), w.ClientConfig(nil))
	if srvErr != nil || cliErr != nil {
		t.Fatal(srvErr, cliErr)
	}
	if id, ok, err := n1.Identify(srv.ConnectionState()); !ok || err != nil || id != ClientIdentity(testCluster, "w", RoleWrite) {
		t.Errorf("the client is %v %v %v", id, ok, err)
	}
	if err := n1.CheckPeer(srv, 2); err == nil || !strings.Contains(err.Error(), "cannot speak as a member") {
		t.Errorf("a client's certificate on the peer port: %v", err)
	}
	c2 := foreignCert(t, p, "durableraft://00000000000000c2/client/admin/x", x509.ExtKeyUsageClientAuth)
	cfg := n2.ClientConfig(nil)
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c2, nil }
	srv, _, _, _ = pair(t, n1.ServerConfig(VerifyCertIfGiven), cfg)
	if _, ok, err := n1.Identify(srv.ConnectionState()); !ok || err == nil || !strings.Contains(err.Error(), "this is cluster") {
		t.Errorf("another cluster's client: %v %v", ok, err)
	}
	var plain net.Conn = &net.TCPConn{}
	if err := n1.CheckPeer(plain, 2); err == nil {
		t.Error("CheckPeer of a plain connection")
	}
}

// TestReloadNextConnection: the listener's certificate and the dialer's
// are replaced on disk; the next handshake presents the new ones, and a
// connection made before keeps working.
func TestReloadNextConnection(t *testing.T) {
	p := newPKI(t, testCluster)
	f1 := p.node(1)
	n1, n2 := open(t, f1, nil), open(t, p.node(2), nil)
	l, err := tls.Listen("tcp", "127.0.0.1:0", n1.ServerConfig(RequireCert))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // an echo server
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 64)
				for {
					k, err := c.Read(b)
					if err != nil {
						return
					}
					if _, err := c.Write(b[:k]); err != nil {
						return
					}
				}
			}()
		}
	}()
	dial := n2.Dialer(time.Second, nil)
	serialOf := func(c net.Conn) string {
		return c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
	}
	echo := func(c net.Conn) error {
		if _, err := c.Write([]byte("x")); err != nil {
			return err
		}
		b := make([]byte, 1)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := c.Read(b)
		return err
	}
	before, err := dial(context.Background(), l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	if err := echo(before); err != nil {
		t.Fatal(err)
	}
	old := serialOf(before)
	p.node(1) // replaced on disk
	after, err := dial(context.Background(), l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if serialOf(after) == old || serialOf(after) != n1.Serial() {
		t.Fatalf("the next connection presents %s; before %s, now in use %s", serialOf(after), old, n1.Serial())
	}
	if err := echo(before); err != nil {
		t.Fatalf("the connection made before the reload: %v", err)
	}
	if err := echo(after); err != nil {
		t.Fatal(err)
	}
}
