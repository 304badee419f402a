package proc

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/procs"
	"github.com/durableraft/durableraft/impl/server"
	"github.com/durableraft/durableraft/impl/tlsauth"
	"github.com/durableraft/durableraft/impl/wire"
)

// tlsRun is the TLS real-process run: three raftd with mutual TLS from a
// CA made here, and the credentials of its clients.
type tlsRun struct {
	t   *testing.T
	c   *procs.Cluster
	dir string // the PKI
	ca  *tlsauth.Authority
}

func (r *tlsRun) issue(id tlsauth.Identity) tlsauth.Files {
	r.t.Helper()
	f := tlsauth.ClientFiles(r.dir, id.Name)
	var hosts []string
	if id.Kind == tlsauth.KindNode {
		f, hosts = tlsauth.NodeFiles(r.dir, id.Node), []string{"127.0.0.1"}
	}
	if err := r.ca.IssueFiles(f, id, hosts, time.Hour); err != nil {
		r.t.Fatal(err)
	}
	return f
}

func (r *tlsRun) store(f tlsauth.Files) *tlsauth.Store {
	r.t.Helper()
	s, err := tlsauth.Open(f, quietLog)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *tlsRun) client(name string, role tlsauth.Role) *tlsauth.Store {
	return r.store(r.issue(tlsauth.ClientIdentity(r.ca.Cluster, name, role)))
}

// logHas waits (bounded) until node id's log file contains s: the node
// writes its log line as it refuses, the test reads the file after.
func (r *tlsRun) logHas(id int, s string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(r.c.Node(id).LogPath)
		if strings.Contains(string(b), s) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d's log has no %q", id, s)
		}
		time.Sleep(20 * time.Millisecond) // the log file is the condition; bounded above
	}
}

// TestProcessClusterTLS: three raftd processes with mutual TLS: clients
// write and read through the Go client, the leader is killed and comes
// back; every refusal of issue 14 is seen by the side refused and logged
// by the node refusing; a certificate and the CA bundle replaced on disk
// are used for the next connection; a non-loopback bind without TLS is
// refused, and allowed with --insecure. Every node traces (--trace), and
// the merged run is checked against the spec.
func TestProcessClusterTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	out, err := os.MkdirTemp("", "raftd-proc-tls-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", out)
			return
		}
		os.RemoveAll(out)
	})
	r := &tlsRun{t: t, dir: filepath.Join(out, "pki")}
	r.c = newTLSCluster(t, r, out)
	defer r.c.KillAll()
	ctx := context.Background()
	if err := r.c.StartAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.Leader(ctx, leaderWait); err != nil {
		t.Fatal(err)
	}
	acked := r.traffic(ctx)
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"peer refusals", r.peerRefusals},
		{"client refusals", r.clientRefusals},
		{"reload", r.reload},
		{"binds", r.binds},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	r.checkAcked(ctx, acked)
	// Traced: the TLS run's per-node traces (a kill -9 and restart among
	// them), merged by clock, are a run of the spec.
	if err := r.c.StopAll(); err != nil {
		t.Errorf("a node did not stop cleanly: %v", err)
	}
	checkTraces(t, "tls", filepath.Join(out, "trace"), out, false)
}

// newTLSCluster makes the PKI for the cluster's ports and the cluster.
func newTLSCluster(t *testing.T, r *tlsRun, out string) *procs.Cluster {
	base, err := procs.New(procs.Config{Raftd: raftdBin, Dir: out, Size: 3}) // for its ports
	if err != nil {
		t.Fatal(err)
	}
	peers, err := server.ParsePeers(base.Peers())
	if err != nil {
		t.Fatal(err)
	}
	if r.ca, err = tlsauth.NewAuthority(server.ClusterID(peers, "durableraft"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := r.ca.Write(r.dir); err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 3; id++ {
		r.issue(tlsauth.NodeIdentity(r.ca.Cluster, id))
	}
	admin := r.client("ops", tlsauth.RoleAdmin)
	var cps, pps []int
	for _, n := range base.Nodes {
		cps, pps = append(cps, port(n.ClientAddr)), append(pps, port(n.PeerAddr))
	}
	c, err := procs.New(procs.Config{Raftd: raftdBin, Dir: out, Size: 3, ClientPorts: cps, PeerPorts: pps, ClientTLS: admin.ClientConfig(nil),
		Args: func(id int) []string {
			f := tlsauth.NodeFiles(r.dir, uint64(id))
			return []string{"--tls-ca", f.CA, "--tls-cert", f.Cert, "--tls-key", f.Key, "--testing-lossy-fs", "--tick-ms", "20", "--request-timeout", "3s",
				"--trace", filepath.Join(out, "trace")}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func port(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	var v int
	fmt.Sscan(p, &v)
	return v
}

// traffic: four writers (sessions, over TLS) write while the leader is
// killed with kill -9 and restarted; it returns every acknowledged write.
func (r *tlsRun) traffic(ctx context.Context) map[string]string {
	writer := r.client("app", tlsauth.RoleWrite)
	var mu sync.Mutex
	acked := map[string]string{}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		cl, err := client.New(client.Config{Endpoints: r.c.Endpoints(), Dial: writer.Dialer(time.Second, nil), RequestTimeout: 4 * time.Second, Logger: quietLog})
		if err != nil {
			r.t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for k := 0; wctx.Err() == nil; k++ {
				key, val := fmt.Sprintf("w%d-%d", w, k), fmt.Sprint(k)
				if _, err := cl.Put(wctx, []byte(key), []byte(val)); err == nil {
					mu.Lock()
					acked[key] = val
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // traffic before the fault (a duration, not a condition)
	lead, err := r.c.Leader(ctx, leaderWait)
	if err == nil {
		err = r.c.Kill(lead)
	}
	if err == nil {
		_, err = r.c.Leader(ctx, leaderWait)
	}
	if err == nil {
		err = r.c.Start(lead)
	}
	if err != nil {
		stop()
		r.t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // traffic after the restart
	stop()
	wg.Wait()
	if len(acked) == 0 {
		r.t.Fatal("no write acknowledged over TLS")
	}
	return acked
}

// checkAcked reads every acknowledged write back (linearizably, as a reader).
func (r *tlsRun) checkAcked(ctx context.Context, acked map[string]string) {
	cl, err := client.New(client.Config{Endpoints: r.c.Endpoints(), Dial: r.client("audit", tlsauth.RoleRead).Dialer(time.Second, nil), Logger: quietLog})
	if err != nil {
		r.t.Fatal(err)
	}
	defer cl.Close()
	for k, v := range acked {
		got, _, ok, err := cl.Get(ctx, []byte(k))
		if err != nil || !ok || string(got) != v {
			r.t.Fatalf("acknowledged %s=%s reads %q %v %v", k, v, got, ok, err)
		}
	}
	r.t.Logf("%d acknowledged writes over TLS across a kill -9 of the leader, all present", len(acked))
}

// peerHello dials node to's peer port with cfg and sends a hello as node
// from; it returns the refusal's message, or the error reading the answer.
func (r *tlsRun) peerHello(to int, cfg *tls.Config, from uint64) (string, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", r.c.Node(to).PeerAddr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var e wire.Encoder
	e.U64(r.ca.Cluster)
	e.U64(from)
	e.U64(uint64(to))
	e.String("127.0.0.1:1")
	if _, err := c.Write(wire.AppendFrame(nil, 1, e.B)); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := wire.NewReader(bufio.NewReader(c), 4096).Read()
	if err != nil {
		return "", err
	}
	if f.Type != 3 {
		return "", fmt.Errorf("frame type %d, not a refusal", f.Type)
	}
	d := wire.NewDecoder(f.Payload)
	d.U8("code")
	msg := d.String("message", 1024)
	return msg, d.End()
}

// peerRefusals: a member's peer port refuses a certificate of another CA
// and node 2's certificate claiming node 3.
func (r *tlsRun) peerRefusals() error {
	other, err := tlsauth.NewAuthority(r.ca.Cluster, time.Hour)
	if err != nil {
		return err
	}
	odir := r.t.TempDir()
	of := tlsauth.NodeFiles(odir, 2)
	if err := other.IssueFiles(of, tlsauth.NodeIdentity(r.ca.Cluster, 2), nil, time.Hour); err != nil {
		return err
	}
	if err := os.WriteFile(of.CA, append(append([]byte{}, r.ca.CertPEM...), other.CertPEM...), 0o644); err != nil {
		return err // the impostor trusts this cluster's CA: only node 1 can refuse
	}
	_, err = r.peerHello(1, r.store(of).ClientConfig(nil), 2)
	if err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
		return fmt.Errorf("another CA's certificate: %v", err)
	}
	if err := r.logHas(1, "certificate signed by unknown authority"); err != nil {
		return err
	}
	n2 := r.store(tlsauth.NodeFiles(r.dir, 2))
	msg, err := r.peerHello(1, n2.ClientConfig(nil), 3)
	if err != nil || !strings.Contains(msg, "the TLS certificate names node 2, not node 3") {
		return fmt.Errorf("node 2's certificate claiming node 3: %q %v", msg, err)
	}
	return r.logHas(1, "the hello claims node 3")
}

// get makes one HTTPS request with s's certificate (none when s is nil:
// the bundle from ca).
func (r *tlsRun) req(s *tlsauth.Store, method string, node int, path, body string) (int, string, error) {
	cfg := r.store(tlsauth.NodeFiles(r.dir, 1)).ClientConfig(nil)
	if s != nil {
		cfg = s.ClientConfig(nil)
	} else {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	req, err := http.NewRequest(method, "https://"+r.c.Node(node).ClientAddr+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, e.Code, nil
}

// clientRefusals: no certificate, a writer's transfer and backup at the
// leader and through a follower (refused there, never forwarded), a member's
// certificate as a client's.
func (r *tlsRun) clientRefusals() error {
	lead, err := r.c.Leader(context.Background(), leaderWait)
	if err != nil {
		return err
	}
	fol := lead%3 + 1
	writer := r.client("app", tlsauth.RoleWrite)
	before, err := r.c.Status(context.Background(), fol)
	if err != nil {
		return err
	}
	transfer := fmt.Sprintf(`{"to":%d}`, fol)
	for _, row := range []struct {
		name   string
		s      *tlsauth.Store
		method string
		node   int
		path   string
		body   string
		status int
		code   string
		line   string
	}{
		{"no certificate", nil, "GET", lead, "/v1/kv/w0-0", "", 401, "unauthenticated", "a client certificate is required"},
		{"a writer transfers", writer, "POST", lead, "/v1/transfer", transfer, 403, "forbidden", "has the role write; this needs admin"},
		{"a writer transfers through a follower", writer, "POST", fol, "/v1/transfer", transfer, 403, "forbidden", "has the role write; this needs admin"},
		{"a writer asks for a backup", writer, "GET", lead, "/v1/backup", "", 403, "forbidden", `request="GET /v1/backup"`},
		{"a writer asks for a backup through a follower", writer, "GET", fol, "/v1/backup", "", 403, "forbidden", `request="GET /v1/backup"`},
		{"a member's certificate as a client's", r.store(tlsauth.NodeFiles(r.dir, uint64(fol))), "GET", lead, "/v1/kv/w0-0", "", 403, "forbidden",
			"a member's certificate is not a client certificate"},
	} {
		status, code, err := r.req(row.s, row.method, row.node, row.path, row.body)
		if err != nil || status != row.status || code != row.code {
			return fmt.Errorf("%s: %d %s %v, want %d %s", row.name, status, code, err, row.status, row.code)
		}
		if err := r.logHas(row.node, row.line); err != nil {
			return fmt.Errorf("%s: %w", row.name, err)
		}
	}
	after, err := r.c.Status(context.Background(), fol)
	if err != nil {
		return err
	}
	if after.Server["forwarded"] != before.Server["forwarded"] || after.Server["auth_refused"] < before.Server["auth_refused"]+1 {
		return fmt.Errorf("follower %d: forwarded %d -> %d, auth_refused %d -> %d", fol, before.Server["forwarded"], after.Server["forwarded"],
			before.Server["auth_refused"], after.Server["auth_refused"])
	}
	return nil
}

// serialAt is the serial of the certificate node id presents now.
func (r *tlsRun) serialAt(id int) (string, error) {
	c, err := tls.Dial("tcp", r.c.Node(id).ClientAddr, r.client("ro", tlsauth.RoleRead).ClientConfig(nil))
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Text(16), nil
}

// reload: node 1's certificate replaced on disk is the one its next
// connection gets, while a connection made before keeps working; then a
// second CA in the bundle admits its client on every node.
func (r *tlsRun) reload() error {
	reader := r.client("ro", tlsauth.RoleRead)
	old, err := r.serialAt(1)
	if err != nil {
		return err
	}
	kept, err := client.New(client.Config{Endpoints: []string{r.c.Node(1).ClientAddr}, Dial: reader.Dialer(time.Second, nil), Logger: quietLog, NoSession: true})
	if err != nil {
		return err
	}
	defer kept.Close()
	if _, _, _, err := kept.GetStale(context.Background(), []byte("w0-0")); err != nil {
		return err
	}
	r.issue(tlsauth.NodeIdentity(r.ca.Cluster, 1))
	now, err := r.serialAt(1)
	if err != nil || now == old {
		return fmt.Errorf("after the replacement node 1 presents %s (before %s): %v", now, old, err)
	}
	if _, _, _, err := kept.GetStale(context.Background(), []byte("w0-0")); err != nil {
		return fmt.Errorf("the connection made before the replacement: %w", err)
	}
	if err := r.logHas(1, "credentials reloaded"); err != nil {
		return err
	}
	next, err := tlsauth.NewAuthority(r.ca.Cluster, time.Hour)
	if err != nil {
		return err
	}
	nf := tlsauth.ClientFiles(r.t.TempDir(), "new")
	if err := next.IssueFiles(nf, tlsauth.ClientIdentity(r.ca.Cluster, "new", tlsauth.RoleRead), nil, time.Hour); err != nil {
		return err
	}
	bundle := append(append([]byte{}, r.ca.CertPEM...), next.CertPEM...)
	if err := os.WriteFile(nf.CA, bundle, 0o644); err != nil {
		return err
	}
	newClient := r.store(nf)
	if _, _, err := r.req(newClient, "GET", 2, "/v1/kv/w0-0", ""); err == nil {
		return errors.New("the new CA's client admitted before the rotation")
	}
	if err := tlsauth.WriteFile(filepath.Join(r.dir, tlsauth.CACertFile), bundle, 0o644); err != nil {
		return err
	}
	for id := 1; id <= 3; id++ {
		if status, _, err := r.req(newClient, "GET", id, "/v1/status", ""); err != nil || status != 200 {
			return fmt.Errorf("the new CA's client on node %d after the rotation: %d %v", id, status, err)
		}
	}
	return nil
}

// binds: raftd without TLS refuses a non-loopback address, saying why;
// with --insecure it serves there.
func (r *tlsRun) binds() error {
	dir := r.t.TempDir()
	args := []string{"--id", "1", "--data", dir, "--peers", "1=127.0.0.1:1", "--listen-client", "0.0.0.0:0", "--listen-peer", "127.0.0.1:0"}
	outb, err := exec.Command(raftdBin, args...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(outb), "0.0.0.0 is not a loopback address, and TLS is off") ||
		!strings.Contains(string(outb), "--insecure") {
		return fmt.Errorf("a non-loopback bind without TLS: %v: %s", err, outb)
	}
	cmd := exec.Command(raftdBin, append(args, "--insecure")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "serving client=[::]:") && !strings.Contains(line, "serving client=0.0.0.0:") {
		return fmt.Errorf("--insecure on 0.0.0.0: %q %v", line, err)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	return cmd.Wait()
}
