package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/durableraft/durableraft/impl/procs"
)

// demo starts a 3-node cluster of raftd processes on 127.0.0.1, runs a
// short demonstration (writes, reads from every node, the leader killed
// with kill -9, a new leader, the writes still there, the old leader back
// and caught up), then serves until Ctrl-C and stops every node cleanly.
func (e *env) demo(args []string) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(e.err)
	self, _ := os.Executable()
	raftd := fs.String("raftd", filepath.Join(filepath.Dir(self), "raftd"), "the raftd binary")
	data := fs.String("data", "./data", "data directory (node k in DIR/k)")
	base := fs.Int("port", 7001, "client ports PORT..PORT+2, peer ports PORT+100..PORT+102")
	serve := fs.Bool("serve", true, "keep serving after the demo until Ctrl-C")
	traceDir := fs.String("trace", "", "every node writes its core's trace into this directory (raftd --trace; draw them with raftspec viz DIR)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var nodeArgs func(int) []string
	if *traceDir != "" {
		nodeArgs = func(int) []string { return []string{"--trace", *traceDir} }
	}
	c, err := procs.New(procs.Config{Raftd: *raftd, Dir: *data, Size: 3, Args: nodeArgs,
		ClientPorts: []int{*base, *base + 1, *base + 2}, PeerPorts: []int{*base + 100, *base + 101, *base + 102}})
	if err != nil {
		return e.exit(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	d := &demoRun{env: e, c: c, http: &http.Client{Timeout: 10 * time.Second}}
	err = d.run(*serve, sig)
	fmt.Fprintln(e.out, "== stopping every node (SIGTERM: a leader hands over its leadership first)")
	if serr := c.StopAll(); serr != nil {
		fmt.Fprintln(e.err, "raftctl demo: stop:", serr)
		if err == nil {
			err = serr
		}
	}
	if err != nil {
		fmt.Fprintln(e.err, "raftctl demo: FAILED:", err, "(node logs in", *data+"/<id>.log)")
		return 1
	}
	fmt.Fprintln(e.out, "== stopped cleanly; the data stays in", *data)
	return 0
}

type demoRun struct {
	*env
	c    *procs.Cluster
	http *http.Client
}

func (d *demoRun) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

func (d *demoRun) req(method, addr, path, body string) (int, string, error) {
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}

// expect runs one request and checks its status (and body, when want is
// not empty).
func (d *demoRun) expect(method string, n *procs.Node, path, body string, status int, want string) error {
	code, got, err := d.req(method, n.ClientAddr, path, body)
	d.say("   %s http://%s%s -> %d %s", method, n.ClientAddr, path, code, clip(got))
	if err != nil {
		return err
	}
	if code != status || (want != "" && got != want) {
		return fmt.Errorf("%s %s on node %d: %d %q, want %d %q", method, path, n.ID, code, got, status, want)
	}
	return nil
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 90 {
		return s[:90] + "..."
	}
	return s
}

func (d *demoRun) run(serve bool, sig chan os.Signal) error {
	lead, err := d.start()
	if err != nil {
		return err
	}
	if err := d.steps(lead); err != nil {
		return err
	}
	d.say("== demo done: every node answers 200 v for k")
	if !serve {
		return nil
	}
	d.say("== serving; Ctrl-C stops every node")
	<-sig
	return nil
}

// start starts the nodes, waits for a leader and prints the addresses.
func (d *demoRun) start() (int, error) {
	ctx := context.Background()
	c := d.c
	if err := c.StartAll(); err != nil {
		return 0, err
	}
	for _, n := range c.Nodes {
		if err := c.WaitUp(ctx, n.ID, 20*time.Second); err != nil {
			return 0, err
		}
	}
	lead, err := c.Leader(ctx, 20*time.Second)
	if err != nil {
		return 0, err
	}
	d.say("== a 3-node raftd cluster on 127.0.0.1 (data under %s)", filepath.Dir(c.Node(1).DataDir))
	for _, n := range c.Nodes {
		d.say("   node %d: client http://%s  peer %s  log %s", n.ID, n.ClientAddr, n.PeerAddr, n.LogPath)
	}
	d.say("   leader: node %d", lead)
	d.say("== try it:\n   curl -X PUT --data-binary v http://%s/v1/kv/k\n   curl http://%s/v1/kv/k\n   curl http://%s/v1/status",
		c.Node(1).ClientAddr, c.Node(2).ClientAddr, c.Node(3).ClientAddr)
	return lead, nil
}

// steps runs the demonstration.
func (d *demoRun) steps(lead int) error {
	ctx := context.Background()
	c := d.c
	d.say("== demo: writes through a follower (forwarded to the leader), then a read from every node")
	follower := c.Node(lead%3 + 1)
	for _, kv := range [][2]string{{"greeting", "hello"}, {"k", "v"}} {
		if err := d.expect("PUT", follower, "/v1/kv/"+kv[0], kv[1], 200, ""); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		if err := d.expect("GET", n, "/v1/kv/k", "", 200, "v"); err != nil {
			return err
		}
	}
	d.say("== kill -9 the leader, node %d", lead)
	if err := c.Kill(lead); err != nil {
		return err
	}
	newLead, err := c.Leader(ctx, 20*time.Second)
	if err != nil {
		return err
	}
	d.say("   new leader: node %d", newLead)
	for _, n := range c.Nodes {
		if n.Running() {
			if err := d.expect("GET", n, "/v1/kv/k", "", 200, "v"); err != nil {
				return err
			}
		}
	}
	if err := d.expect("PUT", c.Node(newLead), "/v1/kv/after", "the old leader was down", 200, ""); err != nil {
		return err
	}
	d.say("== restart node %d: it catches up from the new leader", lead)
	if err := c.Start(lead); err != nil {
		return err
	}
	if err := c.WaitUp(ctx, lead, 20*time.Second); err != nil {
		return err
	}
	st, err := c.Status(ctx, newLead)
	if err != nil {
		return err
	}
	if err := c.CaughtUp(ctx, st.Commit, 20*time.Second); err != nil {
		return err
	}
	old := c.Node(lead)
	if err := d.expect("GET", old, "/v1/kv/after?stale=true", "", 200, "the old leader was down"); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := d.expect("GET", n, "/v1/kv/k", "", 200, "v"); err != nil {
			return err
		}
	}
	return nil
}
