package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/durableraft/durableraft/trace"
	"github.com/durableraft/durableraft/viz"
)

// serveCommand serves the state-space explorer of one model: raftspec
// serve [model flags] [-trace FILE] [-addr 127.0.0.1:8070].
func serveCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	addr := fs.String("addr", "127.0.0.1:8070", "listen address (loopback only unless -allow-remote; port 0 picks one)")
	allowRemote := fs.Bool("allow-remote", false, "allow a listen address other than loopback (the explorer has no authentication)")
	tracePath := fs.String("trace", "", "a trace to offer as a path (a counterexample): the model takes its profile, servers, values, budgets and bugs")
	maxDistinct := fs.Int64("max-distinct", 2_000_000, "bound on a search started from the page")
	walks := fs.Int("walks", 10_000, "walks of a simulation started from the page")
	depth := fs.Int("depth", 100, "steps per walk")
	workers := fs.Int("workers", 1, "workers of a search")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var events []trace.Event
	if *tracePath != "" {
		f, err := os.Open(*tracePath)
		if err != nil {
			return err
		}
		events, err = trace.Decode(f)
		f.Close()
		if err != nil {
			return err
		}
		c := events[0].Config
		mf.profile, mf.servers, mf.values, mf.bugs = c.Profile, c.Servers, c.Values, c.Bugs
		mf.crashes, mf.corruptions, mf.production = c.Crashes, c.Corruptions, c.Production
		mf.membership, mf.initVoters = c.Membership, c.InitVoters
	}
	m, err := mf.model()
	if err != nil {
		return err
	}
	opt := viz.ExplorerOptions{MaxDistinct: *maxDistinct, Walks: *walks, Depth: *depth, Workers: *workers}
	if events != nil {
		if opt.Trace, err = viz.TracePath(m, events); err != nil {
			return fmt.Errorf("serve: %s: %w", *tracePath, err)
		}
		opt.TraceName = *tracePath
	}
	ln, err := listen(*addr, *allowRemote)
	if err != nil {
		return err
	}
	h := viz.NewExplorer(m, opt).Handler()
	if isLoopback(ln.Addr()) {
		h = viz.LoopbackOnly(h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	url := fmt.Sprintf("http://%s/", ln.Addr())
	if opt.Trace != nil {
		url += fmt.Sprintf("  (the trace: the button 'open the trace', or http://%s/#path=%s)", ln.Addr(), pathString(opt.Trace))
	}
	fmt.Fprintf(stdout, "raftspec serve: %v\nraftspec serve: the explorer is at %s\n", m.Config, url)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func pathString(p []int) string {
	s := ""
	for k, x := range p {
		if k > 0 {
			s += "."
		}
		s += fmt.Sprint(x)
	}
	return s
}

// listen refuses an address that is not loopback unless allowed.
func listen(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("serve: -addr %q: %w", addr, err)
	}
	if !allowRemote {
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("serve: -addr %q is not a loopback address (the explorer has no authentication; -allow-remote to serve it anyway)", addr)
		}
	}
	return net.Listen("tcp", addr)
}

func isLoopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}
