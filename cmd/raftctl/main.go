package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/tlsauth"
)

const usage = `raftctl: talk to a raftd cluster.

  raftctl [--endpoints a:p,b:p,...] [--timeout 10s] [--cacert F --cert F --key F] COMMAND ARGS

  put KEY VALUE          write (exactly once, through a session)
  get [--stale] KEY      read (linearizable unless --stale)
  delete KEY             delete
  cas KEY REV VALUE      write if the key's revision is REV (0: if absent)
  status                 each endpoint's /v1/status
  members [list]         the members in force (voters, learners), as the first
                         endpoint that answers sees them
  members add ID PEER_ADDR | promote [--wait D] ID | remove [--wait D] ID
                         change the membership (admin; raftctl members -h)
  transfer ID            hand the leadership to node ID
  backup FILE            a consistent snapshot of the cluster's store into FILE
                         (admin; verified before it is kept)
  restore --id N --data DIR --peers P BACKUP
                         one member's data directory of a new cluster holding
                         the backup (run it for each member, then start raftd)
  bench [flags]          a load generator (raftctl bench -h)
  wal inspect DIR        decode and verify a stopped node's data directory
  demo [flags]           start a local 3-node cluster of raftd processes, run a
                         demonstration, serve until Ctrl-C (make run)
  cert ca|node|client|show  a development CA and its certificates (raftctl cert)

Endpoints default to $RAFTCTL_ENDPOINTS or 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003.
With --cacert, --cert and --key ($RAFTCTL_CACERT, $RAFTCTL_CERT, $RAFTCTL_KEY)
every command speaks TLS with that client certificate (docs/security.md).
Exit status: 0 done, 1 failed (definite), 2 usage, 3 outcome unknown, 4 not found.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type env struct {
	endpoints []string
	timeout   time.Duration
	out, err  io.Writer
	tls       *tlsauth.Store // nil: no TLS
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("raftctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	def := os.Getenv("RAFTCTL_ENDPOINTS")
	if def == "" {
		def = "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"
	}
	eps := fs.String("endpoints", def, "client addresses")
	timeout := fs.Duration("timeout", 10*time.Second, "time limit of one request")
	cacert := fs.String("cacert", os.Getenv("RAFTCTL_CACERT"), "the cluster's CA bundle (TLS)")
	cert := fs.String("cert", os.Getenv("RAFTCTL_CERT"), "this client's certificate (TLS)")
	key := fs.String("key", os.Getenv("RAFTCTL_KEY"), "this client's key (TLS)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	e := &env{endpoints: strings.Split(*eps, ","), timeout: *timeout, out: stdout, err: stderr}
	if err := e.setupTLS(*cacert, *cert, *key); err != nil {
		fmt.Fprintln(stderr, "raftctl:", err)
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return 2
	}
	cmd, rest := rest[0], rest[1:]
	switch cmd {
	case "put", "get", "delete", "cas":
		return e.kv(cmd, rest)
	case "status":
		return e.status(rest)
	case "members":
		return e.members(rest)
	case "transfer":
		return e.transfer(rest)
	case "backup":
		return e.backup(rest)
	case "restore":
		return e.restore(rest)
	case "bench":
		return e.bench(rest)
	case "demo":
		return e.demo(rest)
	case "cert":
		return e.cert(rest)
	case "wal":
		if len(rest) == 2 && rest[0] == "inspect" {
			return inspect(rest[1], stdout, stderr)
		}
		fmt.Fprintln(stderr, "raftctl: wal inspect DIR")
		return 2
	}
	fs.Usage()
	return 2
}

// exit maps an error to the exit status of the usage text.
func (e *env) exit(err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(e.err, "raftctl:", err)
	if errors.Is(err, client.ErrUnknown) {
		return 3
	}
	return 1
}

func (e *env) client() (*client.Client, error) {
	cfg := client.Config{Endpoints: e.endpoints, RequestTimeout: e.timeout,
		Logger: slog.New(slog.NewTextHandler(e.err, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if e.tls != nil {
		cfg.Dial = e.tls.Dialer(time.Second, nil)
	}
	return client.New(cfg)
}

func (e *env) kv(cmd string, args []string) int {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(e.err)
	stale := fs.Bool("stale", false, "read from the connected member, however old")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	args = fs.Args()
	want := map[string]int{"put": 2, "get": 1, "delete": 1, "cas": 3}[cmd]
	if len(args) != want {
		fmt.Fprintf(e.err, "raftctl %s: %d arguments, got %d\n", cmd, want, len(args))
		return 2
	}
	c, err := e.client()
	if err != nil {
		return e.exit(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	key := []byte(args[0])
	switch cmd {
	case "put":
		rev, err := c.Put(ctx, key, []byte(args[1]))
		if err != nil {
			return e.exit(err)
		}
		fmt.Fprintf(e.out, "revision %d\n", rev)
	case "cas":
		want, perr := strconv.ParseUint(args[1], 10, 64)
		if perr != nil {
			fmt.Fprintln(e.err, "raftctl cas: REV is a number")
			return 2
		}
		rev, err := c.CAS(ctx, key, want, []byte(args[2]))
		if err != nil {
			return e.exit(err)
		}
		fmt.Fprintf(e.out, "revision %d\n", rev)
	case "get":
		get := c.Get
		if *stale {
			get = c.GetStale
		}
		v, rev, found, err := get(ctx, key)
		if err != nil {
			return e.exit(err)
		}
		if !found {
			fmt.Fprintln(e.err, "raftctl: not found")
			return 4
		}
		fmt.Fprintf(e.err, "revision %d\n", rev)
		e.out.Write(v)
		fmt.Fprintln(e.out)
	case "delete":
		found, err := c.Delete(ctx, key)
		if err != nil {
			return e.exit(err)
		}
		if !found {
			fmt.Fprintln(e.err, "raftctl: not found")
			return 4
		}
		fmt.Fprintln(e.out, "deleted")
	}
	return 0
}

func (e *env) httpDo(method, addr, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.scheme()+"://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := (&http.Client{Transport: e.httpTransport(1)}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, b, err
}

func (e *env) status(args []string) int {
	rc := 0
	for _, ep := range e.endpoints {
		code, b, err := e.httpDo("GET", ep, "/v1/status", nil)
		if err != nil {
			fmt.Fprintf(e.err, "raftctl: %s: %v\n", ep, err)
			rc = 1
			continue
		}
		if len(args) == 1 && args[0] == "--short" {
			var st struct {
				ID         uint64 `json:"id"`
				Role       string `json:"role"`
				Term       uint64 `json:"term"`
				Leader     uint64 `json:"leader"`
				Commit     uint64 `json:"commit"`
				Applied    uint64 `json:"applied"`
				NotServing string `json:"not_serving"`
			}
			_ = json.Unmarshal(b, &st)
			fmt.Fprintf(e.out, "%s id=%d role=%s term=%d leader=%d commit=%d applied=%d not_serving=%q\n", ep, st.ID, st.Role, st.Term, st.Leader, st.Commit, st.Applied, st.NotServing)
			continue
		}
		fmt.Fprintf(e.out, "== %s (%d)\n%s", ep, code, b)
		if code != 200 {
			rc = 1
		}
	}
	return rc
}

func (e *env) transfer(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(e.err, "raftctl transfer ID")
		return 2
	}
	id, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil {
		fmt.Fprintln(e.err, "raftctl transfer: ID is a number")
		return 2
	}
	body := []byte(fmt.Sprintf(`{"to":%d}`, id))
	for _, ep := range e.endpoints {
		code, b, err := e.httpDo("POST", ep, "/v1/transfer", body)
		if err != nil {
			fmt.Fprintf(e.err, "raftctl: %s: %v\n", ep, err)
			continue
		}
		e.out.Write(b)
		if code != 200 {
			return 1
		}
		return 0
	}
	return 1
}
