package main

import (
	"errors"
	"flag"
	"log/slog"

	"github.com/durableraft/durableraft/impl/server"
	"github.com/durableraft/durableraft/impl/tlsauth"
)

// securityFlags are the TLS flags (docs/security.md).
type securityFlags struct {
	ca, cert, key *string
	insecure      *bool
}

func addSecurityFlags(fs *flag.FlagSet) *securityFlags {
	return &securityFlags{
		ca:   fs.String("tls-ca", "", "CA bundle (PEM): mutual TLS on both ports from this cluster CA; with --tls-cert and --tls-key"),
		cert: fs.String("tls-cert", "", "this node's certificate (PEM), naming its node id and cluster (raftctl cert node)"),
		key:  fs.String("tls-key", "", "this node's key (PEM, PKCS #8)"),
		insecure: fs.Bool("insecure", false,
			"without TLS, listen on addresses other than loopback (anyone who reaches them can read, write and speak as a member)"),
	}
}

// check refuses a partial set of flags (usage).
func (s *securityFlags) check() error {
	n := 0
	for _, v := range []string{*s.ca, *s.cert, *s.key} {
		if v != "" {
			n++
		}
	}
	switch {
	case n != 0 && n != 3:
		return errors.New("--tls-ca, --tls-cert and --tls-key go together")
	case n == 3 && *s.insecure:
		return errors.New("--insecure is for running without TLS; it means nothing with --tls-*")
	}
	return nil
}

// apply opens the credentials (reloaded on change from then on) into cfg.
func (s *securityFlags) apply(cfg *server.Config, log *slog.Logger) error {
	cfg.Insecure = *s.insecure
	if *s.ca == "" {
		return nil
	}
	st, err := tlsauth.Open(tlsauth.Files{CA: *s.ca, Cert: *s.cert, Key: *s.key}, log)
	if err != nil {
		return err
	}
	cfg.TLS = st
	return nil
}
