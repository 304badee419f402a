package tlsauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Authority is a cluster CA: a self-signed certificate that names the
// cluster, and its key. raftctl cert and the tests issue from it.
type Authority struct {
	Cluster uint64
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// clockSkew backdates every certificate, for members whose clocks differ.
const clockSkew = 5 * time.Minute

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// NewAuthority makes a CA for cluster, valid for validity from now.
func NewAuthority(cluster uint64, validity time.Duration) (*Authority, error) {
	if cluster == 0 {
		return nil, errors.New("tlsauth: a CA needs a cluster id")
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: fmt.Sprintf("durableraft cluster %016x CA", cluster)},
		NotBefore: now.Add(-clockSkew), NotAfter: now.Add(validity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true,
		MaxPathLen: 0, MaxPathLenZero: true, URIs: []*url.URL{clusterURI(cluster)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Authority{Cluster: cluster, Cert: cert, CertPEM: pemCert(der), key: key}, nil
}

// LoadAuthority reads a CA written by WriteFiles.
func LoadAuthority(certFile, keyFile string) (*Authority, error) {
	cb, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	certs, err := parseCerts(cb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	if len(certs) != 1 || !certs[0].IsCA {
		return nil, fmt.Errorf("%s: not one CA certificate", certFile)
	}
	key, err := parseKey(kb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	cluster, err := clusterOfCA(certs[0])
	if err != nil {
		return nil, err
	}
	return &Authority{Cluster: cluster, Cert: certs[0], CertPEM: cb, key: key}, nil
}

// KeyPEM is the CA key, PKCS #8 in PEM.
func (a *Authority) KeyPEM() ([]byte, error) { return pemKey(a.key) }

// Issue makes a certificate and key for id, valid for validity from now.
// A node's certificate serves and dials (server and client
// authentication) and carries hosts (DNS names or IP addresses) for
// clients that verify hostnames; a client's only authenticates a client.
func (a *Authority) Issue(id Identity, hosts []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if err := id.Valid(); err != nil {
		return nil, nil, err
	}
	if id.Cluster != a.Cluster {
		return nil, nil, fmt.Errorf("tlsauth: the CA is cluster %016x's, the identity names %016x", a.Cluster, id.Cluster)
	}
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn, NotBefore: now.Add(-clockSkew), NotAfter: now.Add(validity),
		KeyUsage: x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, URIs: []*url.URL{id.URI()},
	}
	switch id.Kind {
	case KindNode:
		tmpl.Subject.CommonName = fmt.Sprintf("durableraft node %d", id.Node)
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else if h != "" {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	case KindClient:
		tmpl.Subject.CommonName = "durableraft client " + id.Name
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		if len(hosts) > 0 {
			return nil, nil, errors.New("tlsauth: a client certificate carries no hosts")
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, err
	}
	kp, err := pemKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemCert(der), kp, nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseCerts decodes every CERTIFICATE block of b (at least one; any other
// block, or trailing data, is an error).
func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("a PEM block of type %q among the certificates", blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	if len(trimSpace(b)) != 0 {
		return nil, errors.New("data after the last PEM certificate")
	}
	return out, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func parseKey(b []byte) (crypto.Signer, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New("no PEM PRIVATE KEY (PKCS #8)")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a key of type %T", k)
	}
	return s, nil
}

// WriteFile writes b to path atomically: a temporary file in the same
// directory (mode perm), fsync, rename. A reader (a Store reloading)
// sees the old file or the new one, never half of one.
func WriteFile(path string, b []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename there is nothing left to remove
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// File names in a PKI directory (raftctl cert writes them).
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// NodeFiles and ClientFiles are the names of a member's and a client's
// files in a PKI directory.
func NodeFiles(dir string, node uint64) Files {
	return filesIn(dir, fmt.Sprintf("node-%d", node))
}

func ClientFiles(dir, name string) Files { return filesIn(dir, "client-"+name) }

func filesIn(dir, base string) Files {
	return Files{CA: filepath.Join(dir, CACertFile), Cert: filepath.Join(dir, base+".crt"), Key: filepath.Join(dir, base+".key")}
}

// Write writes the CA's certificate (0644) and key (0600) into dir.
func (a *Authority) Write(dir string) error {
	kp, err := a.KeyPEM()
	if err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, CACertFile), a.CertPEM, 0o644); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, CAKeyFile), kp, 0o600)
}

// IssueFiles issues id's certificate and writes it (0644) and its key
// (0600) to f.Cert and f.Key, atomically each.
func (a *Authority) IssueFiles(f Files, id Identity, hosts []string, validity time.Duration) error {
	cp, kp, err := a.Issue(id, hosts, validity)
	if err != nil {
		return err
	}
	if err := WriteFile(f.Key, kp, 0o600); err != nil {
		return err
	}
	return WriteFile(f.Cert, cp, 0o644)
}
