package tlsauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// ClientAuth says whether a listener requires a client certificate.
type ClientAuth uint8

const (
	// RequireCert: the handshake fails without a certificate that chains
	// to the bundle (the peer port).
	RequireCert ClientAuth = iota + 1
	// VerifyCertIfGiven: a certificate given must chain to the bundle; one
	// not given is the server's to refuse, with an answer the client can
	// read (the client port: /healthz and /readyz need none).
	VerifyCertIfGiven
)

func tls13() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13}
}

// ServerConfig is the TLS configuration of a listener: TLS 1.3 only, this
// side's certificate and the bundle as the client CAs, both taken from the
// store at each handshake (so a reload applies to the next connection).
func (s *Store) ServerConfig(auth ClientAuth) *tls.Config {
	ca := tls.RequireAndVerifyClientCert
	if auth == VerifyCertIfGiven {
		ca = tls.VerifyClientCertIfGiven
	}
	base := tls13()
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		m := s.current()
		c := tls13()
		c.Certificates, c.ClientCAs, c.ClientAuth = []tls.Certificate{m.cert}, m.pool, ca
		return c, nil
	}
	return base
}

// ClientConfig is the TLS configuration of a dialer to a member: TLS 1.3,
// this side's certificate, and the server's certificate verified against
// the store's bundle at the handshake — it must be a member's of this
// cluster, and check (when not nil) must accept its identity. Hostnames
// are not verified: a member is known by the node id its certificate
// names (check says which one is wanted).
func (s *Store) ClientConfig(check func(Identity) error) *tls.Config {
	c := tls13()
	c.InsecureSkipVerify = true // VerifyConnection verifies, against the bundle in use
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		cert := s.current().cert
		return &cert, nil
	}
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		id, err := s.verifyChain(cs.PeerCertificates, x509.ExtKeyUsageServerAuth)
		if err != nil {
			return err
		}
		if id.Kind != KindNode {
			return fmt.Errorf("tlsauth: the server presents the certificate of %s, not a member's", id)
		}
		if check != nil {
			return check(id)
		}
		return nil
	}
	return c
}

// Dialer returns a dial function (a transport's or a client's Dial hook):
// TCP within timeout, then the TLS handshake of ClientConfig within ctx.
// check, when not nil, is given the address dialled and the server's
// identity.
func (s *Store) Dialer(timeout time.Duration, check func(addr string, id Identity) error) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		raw, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		var chk func(Identity) error
		if check != nil {
			chk = func(id Identity) error { return check(addr, id) }
		}
		tc := tls.Client(raw, s.ClientConfig(chk))
		hctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}

// verifyChain verifies a presented chain against the bundle in use, for
// usage, and returns the identity of this cluster it names.
func (s *Store) verifyChain(chain []*x509.Certificate, usage x509.ExtKeyUsage) (Identity, error) {
	if len(chain) == 0 {
		return Identity{}, errors.New("tlsauth: no certificate presented")
	}
	m := s.current()
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: m.pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return Identity{}, fmt.Errorf("tlsauth: the certificate %q does not verify against the CA bundle: %w", chain[0].Subject.CommonName, err)
	}
	return s.identityOf(chain[0])
}

func (s *Store) identityOf(leaf *x509.Certificate) (Identity, error) {
	id, err := IdentityOf(leaf)
	if err != nil {
		return Identity{}, err
	}
	if id.Cluster != s.ident.Cluster {
		return Identity{}, fmt.Errorf("tlsauth: the certificate names %s; this is cluster %016x", id, s.ident.Cluster)
	}
	return id, nil
}

// Identify returns the identity the other side of a finished TLS handshake
// presented: ok is false when it presented no certificate; an error when
// its certificate names no identity of this cluster. A chain the handshake
// did not verify (a dialer's, verified in VerifyConnection) is verified
// again here against the bundle in use.
func (s *Store) Identify(cs tls.ConnectionState) (id Identity, ok bool, err error) {
	if len(cs.PeerCertificates) == 0 {
		return Identity{}, false, nil
	}
	if len(cs.VerifiedChains) > 0 {
		id, err = s.identityOf(cs.VerifiedChains[0][0])
	} else {
		id, err = s.verifyChain(cs.PeerCertificates, x509.ExtKeyUsageAny)
	}
	return id, true, err
}

// CheckPeer is the transport's identity check (both sides of the peer
// handshake): c is a TLS connection whose other side presented the
// certificate of member node of this cluster.
func (s *Store) CheckPeer(c net.Conn, node uint64) error {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return errors.New("tlsauth: not a TLS connection")
	}
	cs := tc.ConnectionState()
	if !cs.HandshakeComplete {
		return errors.New("tlsauth: the TLS handshake has not completed")
	}
	id, ok, err := s.Identify(cs)
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("tlsauth: no certificate presented")
	case id.Kind != KindNode:
		return fmt.Errorf("tlsauth: the certificate of %s cannot speak as a member", id)
	case id.Node != node:
		return fmt.Errorf("tlsauth: the TLS certificate names node %d, not node %d", id.Node, node)
	}
	return nil
}
