package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/durableraft/durableraft/impl/server"
	"github.com/durableraft/durableraft/impl/tlsauth"
)

const certUsage = `raftctl cert: a development CA and its certificates (docs/security.md).

  raftctl cert ca     --dir DIR (--peers 1=host:port,... [--cluster-token T] | --cluster-id HEX) [--days 3650]
  raftctl cert node   --dir DIR --id N [--hosts name,ip,...] [--days 365]
  raftctl cert client --dir DIR --name NAME --role read|write|admin [--days 365]
  raftctl cert show   FILE...

The CA names the cluster id (the one raftd derives from --peers and
--cluster-token at the first boot, or an existing cluster's: cluster.json,
/v1/status). Files: DIR/ca.crt, DIR/ca.key (keep it off the nodes),
DIR/node-N.crt and .key, DIR/client-NAME.crt and .key; keys are 0600.
Issuing again over a node's or client's files replaces them atomically: a
running raftd takes the new ones at its next connection.
`

// cert runs raftctl cert.
func (e *env) cert(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(e.err, certUsage)
		return 2
	}
	fs := flag.NewFlagSet("cert "+args[0], flag.ContinueOnError)
	fs.SetOutput(e.err)
	fs.Usage = func() { fmt.Fprint(e.err, certUsage) }
	dir := fs.String("dir", "pki", "the PKI directory")
	days := fs.Int("days", 365, "validity in days")
	var err error
	switch args[0] {
	case "ca":
		peers := fs.String("peers", "", "the initial cluster, as raftd's --peers")
		token := fs.String("cluster-token", "durableraft", "as raftd's --cluster-token")
		id := fs.String("cluster-id", "", "an existing cluster's id (16 hex digits)")
		*days = 3650
		if fs.Parse(args[1:]) != nil {
			return 2
		}
		err = e.certCA(*dir, *peers, *token, *id, *days)
	case "node":
		id := fs.Uint64("id", 0, "the node id")
		hosts := fs.String("hosts", "", "DNS names and IP addresses clients reach the node at (localhost, 127.0.0.1 and ::1 always)")
		if fs.Parse(args[1:]) != nil {
			return 2
		}
		h := append([]string{"localhost", "127.0.0.1", "::1"}, splitList(*hosts)...)
		err = e.certIssue(*dir, func(c uint64) tlsauth.Identity { return tlsauth.NodeIdentity(c, *id) }, h, *days)
	case "client":
		name := fs.String("name", "", "the client's name (letters, digits, . _ - @)")
		role := fs.String("role", "", "read, write or admin")
		if fs.Parse(args[1:]) != nil {
			return 2
		}
		r, perr := tlsauth.ParseRole(*role)
		if perr != nil {
			fmt.Fprintln(e.err, "raftctl cert client:", perr)
			return 2
		}
		err = e.certIssue(*dir, func(c uint64) tlsauth.Identity { return tlsauth.ClientIdentity(c, *name, r) }, nil, *days)
	case "show":
		return e.certShow(args[1:])
	default:
		fmt.Fprint(e.err, certUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(e.err, "raftctl cert:", err)
		return 1
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (e *env) certCA(dir, peers, token, idHex string, days int) error {
	var cluster uint64
	switch {
	case (peers == "") == (idHex == ""):
		return errors.New("ca: give --peers (a new cluster) or --cluster-id (an existing one)")
	case idHex != "":
		v, err := strconv.ParseUint(idHex, 16, 64)
		if err != nil || v == 0 || len(idHex) != 16 {
			return fmt.Errorf("ca: --cluster-id %q: 16 hex digits", idHex)
		}
		cluster = v
	default:
		m, err := server.ParsePeers(peers)
		if err != nil {
			return err
		}
		cluster = server.ClusterID(m, token)
	}
	if _, err := os.Stat(filepath.Join(dir, tlsauth.CAKeyFile)); err == nil {
		return fmt.Errorf("ca: %s exists: a new CA would orphan every certificate it issued (remove it first)", filepath.Join(dir, tlsauth.CAKeyFile))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := tlsauth.NewAuthority(cluster, time.Duration(days)*24*time.Hour)
	if err != nil {
		return err
	}
	if err := ca.Write(dir); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "CA of cluster %016x: %s (give to every node and client), %s (keep safe, off the nodes)\n",
		cluster, filepath.Join(dir, tlsauth.CACertFile), filepath.Join(dir, tlsauth.CAKeyFile))
	return nil
}

func (e *env) certIssue(dir string, identity func(cluster uint64) tlsauth.Identity, hosts []string, days int) error {
	ca, err := tlsauth.LoadAuthority(filepath.Join(dir, tlsauth.CACertFile), filepath.Join(dir, tlsauth.CAKeyFile))
	if err != nil {
		return err
	}
	id := identity(ca.Cluster)
	if err := id.Valid(); err != nil {
		return err
	}
	f := tlsauth.ClientFiles(dir, id.Name)
	if id.Kind == tlsauth.KindNode {
		f = tlsauth.NodeFiles(dir, id.Node)
	}
	if err := ca.IssueFiles(f, id, hosts, time.Duration(days)*24*time.Hour); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "%s: %s and %s\n", id, f.Cert, f.Key)
	return nil
}

// certShow prints what each certificate file names.
func (e *env) certShow(files []string) int {
	rc := 0
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(e.err, "raftctl cert show:", err)
			rc = 1
			continue
		}
		for blk, rest := pem.Decode(b); blk != nil; blk, rest = pem.Decode(rest) {
			if blk.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				fmt.Fprintf(e.err, "raftctl cert show: %s: %v\n", name, err)
				rc = 1
				continue
			}
			who := "CA"
			if !c.IsCA {
				if id, err := tlsauth.IdentityOf(c); err == nil {
					who = id.String()
				} else {
					who = err.Error()
				}
			}
			fmt.Fprintf(e.out, "%s: %s; subject %q, issuer %q, serial %s, valid %s to %s, hosts %v %v\n", name, who, c.Subject.CommonName,
				c.Issuer.CommonName, c.SerialNumber.Text(16), c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339),
				c.DNSNames, c.IPAddresses)
		}
	}
	return rc
}

// setupTLS opens the client's credentials when --cacert, --cert and --key
// (or $RAFTCTL_CACERT, $RAFTCTL_CERT, $RAFTCTL_KEY) are given.
func (e *env) setupTLS(ca, cert, key string) error {
	if ca == "" && cert == "" && key == "" {
		return nil
	}
	if ca == "" || cert == "" || key == "" {
		return errors.New("--cacert, --cert and --key go together")
	}
	s, err := tlsauth.Open(tlsauth.Files{CA: ca, Cert: cert, Key: key}, slog.New(slog.NewTextHandler(e.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	e.tls = s
	return nil
}

func (e *env) scheme() string {
	if e.tls != nil {
		return "https"
	}
	return "http"
}

// httpTransport is the HTTP transport of every HTTP command: with TLS, the
// client's certificate and the server's checked to be a member's.
func (e *env) httpTransport(conns int) *http.Transport {
	t := &http.Transport{MaxIdleConnsPerHost: conns}
	if e.tls != nil {
		t.TLSClientConfig = e.tls.ClientConfig(nil)
	}
	return t
}
