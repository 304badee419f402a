package tlsauth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Files names a credential set on disk: the CA bundle (PEM, one or more CA
// certificates: during a CA rotation, the old and the new), this side's
// certificate (PEM, the leaf first, intermediates after) and its key (PEM,
// PKCS #8).
type Files struct {
	CA, Cert, Key string
}

// racyWindow: a file whose change time is this close to the moment its
// content was read may have changed again without changing its stamp
// (timestamp granularity: a jiffy on ext4, up to 2 s elsewhere); it is
// compared by content until the window has passed.
const racyWindow = 2 * time.Second

// material is one loaded credential set.
type material struct {
	cert tls.Certificate
	leaf *x509.Certificate
	pool *x509.CertPool
	cas  []*x509.Certificate
}

// seen is one file as it was when its content was last read or confirmed.
type seen struct {
	stamp   stamp
	content []byte
	readAt  time.Time
}

// Store holds this side's credentials and the CA bundle, reloaded on use
// when the files change (doc.go, "Reload"). Safe for concurrent use.
//
// Invariants: cur is never nil and names ident; files[k] describes the
// files cur was loaded from; failed is the stamp set that last failed to
// load (logged once), zero when none.
type Store struct {
	paths [3]string // CA, Cert, Key
	log   *slog.Logger
	ident Identity

	mu     sync.Mutex
	cur    *material
	files  [3]seen
	failed [3]stamp
	errMsg string

	reloads, reloadFailures atomic.Uint64
}

// Open loads the set: the key matches the certificate, the certificate
// chains to the bundle, is valid now and names an identity. Every later
// reload must name the same identity.
func Open(f Files, log *slog.Logger) (*Store, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return nil, errors.New("tlsauth: the CA bundle, the certificate and the key are all needed")
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Store{paths: [3]string{f.CA, f.Cert, f.Key}, log: log}
	m, files, err := s.load()
	if err != nil {
		return nil, err
	}
	id, err := IdentityOf(m.leaf)
	if err != nil {
		return nil, fmt.Errorf("tlsauth: %s: %w", f.Cert, err)
	}
	s.ident, s.cur, s.files = id, m, files
	s.log.Info("tlsauth: credentials loaded", s.describe(m)...)
	return s, nil
}

// Identity is the identity this side's certificate names.
func (s *Store) Identity() Identity { return s.ident }

func (s *Store) describe(m *material) []any {
	return []any{"identity", s.ident.String(), "serial", m.leaf.SerialNumber.Text(16), "not_after", m.leaf.NotAfter.UTC().Format(time.RFC3339),
		"cas", strings.Join(caNames(m.cas), "; "), "cert", s.paths[1]}
}

// current returns the set to use for one handshake, reloading it first
// when the files changed and the new set is whole.
func (s *Store) current() *material {
	s.mu.Lock()
	defer s.mu.Unlock()
	var stamps [3]stamp
	changed := false
	for k, p := range s.paths {
		st, err := statFile(p)
		if err != nil {
			changed = true // the load fails and says why
			continue
		}
		stamps[k] = st
		if s.changedLocked(k, st) {
			changed = true
		}
	}
	if !changed || (stamps == s.failed && !anyRacy(stamps)) {
		return s.cur
	}
	m, files, err := s.load()
	if err == nil {
		err = s.acceptable(m)
	}
	if err != nil {
		if stamps != s.failed || err.Error() != s.errMsg {
			s.reloadFailures.Add(1)
			s.log.Error("tlsauth: reload failed: the credentials in use stay", "err", err, "cert", s.paths[1])
		}
		s.failed, s.errMsg = stamps, err.Error()
		return s.cur
	}
	s.cur, s.files, s.failed, s.errMsg = m, files, [3]stamp{}, ""
	s.reloads.Add(1)
	s.log.Info("tlsauth: credentials reloaded", s.describe(m)...)
	return m
}

func anyRacy(st [3]stamp) bool {
	now := time.Now()
	for _, s := range st {
		if s.racy(now) {
			return true
		}
	}
	return false
}

// changedLocked: file k's stamp differs from the one it was loaded with,
// or the stamp cannot be trusted (racy) and the content differs.
func (s *Store) changedLocked(k int, st stamp) bool {
	f := &s.files[k]
	if st != f.stamp {
		return true
	}
	if !st.racy(f.readAt) {
		return false
	}
	now := time.Now()
	b, err := os.ReadFile(s.paths[k])
	if err != nil || !bytes.Equal(b, f.content) {
		return true
	}
	f.readAt = now // confirmed: once racyWindow passes, the stamp suffices
	return false
}

// load reads and checks the three files.
func (s *Store) load() (*material, [3]seen, error) {
	var files [3]seen
	for k, p := range s.paths {
		st, err := statFile(p)
		if err != nil {
			return nil, files, fmt.Errorf("tlsauth: %w", err)
		}
		files[k].readAt = time.Now()
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, files, fmt.Errorf("tlsauth: %w", err)
		}
		files[k].stamp, files[k].content = st, b
	}
	m, err := parseMaterial(files[0].content, files[1].content, files[2].content)
	if err != nil {
		return nil, files, fmt.Errorf("tlsauth: %s, %s, %s: %w", s.paths[0], s.paths[1], s.paths[2], err)
	}
	return m, files, nil
}

func parseMaterial(caPEM, certPEM, keyPEM []byte) (*material, error) {
	cas, err := parseCerts(caPEM)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		if !c.IsCA {
			return nil, fmt.Errorf("CA bundle: %q is not a CA certificate", c.Subject.CommonName)
		}
		pool.AddCert(c)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate and key: %w", err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, err
		}
		cert.Leaf = leaf
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("the certificate does not verify against the CA bundle: %w", err)
	}
	return &material{cert: cert, leaf: leaf, pool: pool, cas: cas}, nil
}

// acceptable: a reloaded set names the identity the store was opened with.
func (s *Store) acceptable(m *material) error {
	id, err := IdentityOf(m.leaf)
	if err != nil {
		return err
	}
	if id != s.ident {
		return fmt.Errorf("the new certificate names %s, this process is %s (a restart changes identities, a reload does not)", id, s.ident)
	}
	return nil
}

// Status is the store as /v1/status shows it.
type Status struct {
	Identity       string   `json:"identity"`
	Serial         string   `json:"serial"`
	NotAfter       string   `json:"not_after"`
	CAs            []string `json:"cas"`
	Reloads        uint64   `json:"reloads"`
	ReloadFailures uint64   `json:"reload_failures"`
	ReloadError    string   `json:"reload_error,omitempty"`
}

// Status reports the set in use (looking at the files first, as a
// handshake would).
func (s *Store) Status() Status {
	m := s.current()
	s.mu.Lock()
	msg := s.errMsg
	s.mu.Unlock()
	st := Status{Identity: s.ident.String(), Serial: m.leaf.SerialNumber.Text(16), NotAfter: m.leaf.NotAfter.UTC().Format(time.RFC3339),
		Reloads: s.reloads.Load(), ReloadFailures: s.reloadFailures.Load(), ReloadError: msg}
	st.CAs = caNames(m.cas)
	return st
}

// caNames names each CA by its subject and serial (two CAs of one cluster
// share a subject).
func caNames(cas []*x509.Certificate) []string {
	var out []string
	for _, c := range cas {
		sn := c.SerialNumber.Text(16)
		out = append(out, c.Subject.CommonName+" #"+sn[:min(8, len(sn))])
	}
	return out
}

// Serial is the serial number of the certificate in use, in hex.
func (s *Store) Serial() string { return s.current().leaf.SerialNumber.Text(16) }
