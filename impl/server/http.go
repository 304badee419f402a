package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
)

// Headers of the API.
const (
	// headerForwarded marks a request a follower forwarded: the node it
	// reaches never forwards it again (it answers not_leader instead).
	headerForwarded = "X-Raftd-Forwarded-By"
	headerIndex     = "X-Raftd-Index"
)

// routes is the client API on the standard library's router
// (docs/raftd.md has the table), behind the gate that judges each request
// by its route's role (auth.go: withAuth, routeRoles).
func (n *Node) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/kv/{key...}", n.handleKV)
	mux.HandleFunc("/v1/status", n.get(n.handleStatus))
	mux.HandleFunc("/v1/members", n.handleMembersRoute)
	mux.HandleFunc("/v1/transfer", n.handleTransfer)
	mux.HandleFunc("/v1/backup", n.get(n.handleBackup))
	mux.HandleFunc("/healthz", n.get(n.handleHealth))
	mux.HandleFunc("/readyz", n.get(n.handleReady))
	mux.Handle("/metrics", n.get(n.metricsHandler().ServeHTTP))
	mux.HandleFunc("/v1/statehash", n.get(n.handleStateHash))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		n.fail(w, errorf(CodeNoSuchPath, "no such path %q (see docs/raftd.md)", r.URL.Path))
	})
	gate := n.withAuth(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.stats.Requests.Add(1)
		gate.ServeHTTP(w, r)
	})
}

func (n *Node) get(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			n.fail(w, errorf(CodeMethod, "%s %s: only GET", r.Method, r.URL.Path))
			return
		}
		h(w, r)
	}
}

// errorBody is the JSON of every error.
type errorBody struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Outcome    string `json:"outcome"` // "definite" or "unknown"
	Leader     uint64 `json:"leader,omitempty"`
	LeaderAddr string `json:"leader_addr,omitempty"`
	Revision   uint64 `json:"revision,omitempty"`
}

func (n *Node) fail(w http.ResponseWriter, e *Error) {
	n.leaderOf(e)
	outcome := "definite"
	if e.Definite() {
		n.stats.Definite.Add(1)
	} else {
		outcome = "unknown"
		n.stats.Unknown.Add(1)
	}
	if e.Code == CodeBadRequest || e.Code == CodeTooLarge || e.Code == CodeNoSuchPath || e.Code == CodeMethod {
		n.stats.BadRequests.Add(1)
	}
	if errorTable[e.Code].retryAfter {
		w.Header().Set("Retry-After", "1")
	}
	if e.Revision != 0 {
		w.Header().Set("ETag", etag(e.Revision))
	}
	writeJSON(w, e.Status(), errorBody{Code: e.Code, Message: e.Message, Outcome: outcome, Leader: uint64(e.Leader),
		LeaderAddr: e.LeaderAddr, Revision: e.Revision})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"internal","message":"encoding the answer failed","outcome":"unknown"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func etag(rev uint64) string { return `"` + strconv.FormatUint(rev, 10) + `"` }

// parseRevision parses an If-Match value: one revision, quoted or not.
func parseRevision(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 || v > kv.RevisionMax {
		return 0, fmt.Errorf("If-Match %q is not one revision (a positive integer)", s)
	}
	return v, nil
}

// handleKV serves PUT, GET and DELETE of /v1/kv/{key...}.
func (n *Node) handleKV(w http.ResponseWriter, r *http.Request) {
	key := []byte(r.PathValue("key"))
	switch {
	case len(key) == 0:
		n.fail(w, errorf(CodeBadRequest, "empty key: the path is /v1/kv/{key}"))
		return
	case len(key) > kv.KeyBytesMax:
		n.fail(w, errorf(CodeTooLarge, "key of %d bytes over %d", len(key), kv.KeyBytesMax))
		return
	case reservedKey(key) && r.Method != http.MethodGet && r.Method != http.MethodHead:
		n.stats.BadRequests.Add(1)
		n.fail(w, reservedKeyError(key))
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		n.handleGet(w, r, key)
	case http.MethodPut:
		n.handlePut(w, r, key)
	case http.MethodDelete:
		n.handleDelete(w, r, key)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, DELETE")
		n.fail(w, errorf(CodeMethod, "%s on a key: GET, PUT or DELETE", r.Method))
	}
}

// wantsRedirect: the client asked for a 307 to the leader instead of
// forwarding (?redirect=true).
func wantsRedirect(r *http.Request) bool {
	v := r.URL.Query().Get("redirect")
	return v == "1" || v == "true"
}

func (n *Node) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), n.cfg.RequestTimeout)
}

func (n *Node) handleGet(w http.ResponseWriter, r *http.Request, key []byte) {
	q := r.URL.Query().Get("stale")
	stale := q == "1" || q == "true"
	ctx, cancel := n.requestContext(r)
	defer cancel()
	a := n.read(ctx, key, stale)
	if a.err != nil {
		if n.redirectOrForward(w, r, nil, a.err) {
			return
		}
		n.fail(w, a.err)
		return
	}
	if !a.found {
		n.fail(w, errorf(CodeNotFound, "key not found"))
		return
	}
	w.Header().Set("ETag", etag(a.revision))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(a.value)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(a.value)
	}
}

// writeBody is the JSON answer of a write.
type writeBody struct {
	Revision uint64 `json:"revision,omitempty"`
	Index    uint64 `json:"index"`
}

func (n *Node) handlePut(w http.ResponseWriter, r *http.Request, key []byte) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, kv.ValueBytesMax))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			n.fail(w, errorf(CodeTooLarge, "value over %d bytes", kv.ValueBytesMax))
			return
		}
		n.fail(w, errorf(CodeBadRequest, "reading the body: %v", err))
		return
	}
	cmd := kv.Put(key, body)
	if m := r.Header.Get("If-Match"); m != "" {
		rev, err := parseRevision(m)
		if err != nil {
			n.fail(w, errorf(CodeBadRequest, "%v", err))
			return
		}
		cmd = kv.CASRevision(key, rev, body)
	} else if m := r.Header.Get("If-None-Match"); m != "" {
		if strings.TrimSpace(m) != "*" {
			n.fail(w, errorf(CodeBadRequest, "If-None-Match %q: only * (create if absent)", m))
			return
		}
		cmd = kv.CASRevision(key, 0, body)
	}
	n.serveWrite(w, r, body, cmd, http.StatusOK)
}

func (n *Node) handleDelete(w http.ResponseWriter, r *http.Request, key []byte) {
	cmd := kv.Delete(key)
	if m := r.Header.Get("If-Match"); m != "" {
		rev, err := parseRevision(m)
		if err != nil {
			n.fail(w, errorf(CodeBadRequest, "%v", err))
			return
		}
		cmd = kv.DeleteIfRevision(key, rev)
	}
	n.serveWrite(w, r, nil, cmd, http.StatusNoContent)
}

func (n *Node) serveWrite(w http.ResponseWriter, r *http.Request, body []byte, cmd kv.Command, okStatus int) {
	ctx, cancel := n.requestContext(r)
	defer cancel()
	res, answered, e := n.write(ctx, cmd)
	if e != nil {
		if n.redirectOrForward(w, r, body, e) {
			return
		}
		n.fail(w, e)
		return
	}
	defer func() { n.metrics.observeStage(stageReply, time.Since(answered)) }()
	w.Header().Set(headerIndex, strconv.FormatUint(res.Index, 10))
	if okStatus == http.StatusNoContent {
		w.WriteHeader(okStatus)
		return
	}
	w.Header().Set("ETag", etag(res.Revision))
	writeJSON(w, okStatus, writeBody{Revision: res.Revision, Index: res.Index})
}

// redirectOrForward handles a not_leader refusal: with a known leader, a
// 307 to it when the client asked for one, otherwise the request is
// forwarded (once: a forwarded request is never forwarded again). It
// reports whether it answered.
func (n *Node) redirectOrForward(w http.ResponseWriter, r *http.Request, body []byte, e *Error) bool {
	if e.Code != CodeNotLeader || r.Header.Get(headerForwarded) != "" {
		return false
	}
	n.leaderOf(e)
	if e.Leader == raft.None || e.LeaderAddr == "" {
		// An election may be under way: wait a little for one to end.
		e.Leader, e.LeaderAddr = n.awaitLeader(r.Context())
		if e.Leader == raft.None || e.LeaderAddr == "" {
			n.fail(w, &Error{Code: CodeNoLeader, Message: "no leader known; retry", Leader: e.Leader})
			return true
		}
	}
	if wantsRedirect(r) {
		n.stats.Redirected.Add(1)
		w.Header().Set("Location", n.scheme()+"://"+e.LeaderAddr+r.URL.RequestURI())
		writeJSON(w, http.StatusTemporaryRedirect, errorBody{Code: CodeNotLeader, Message: "redirected to the leader",
			Outcome: "definite", Leader: uint64(e.Leader), LeaderAddr: e.LeaderAddr})
		return true
	}
	n.forward(w, r, body, e)
	return true
}

// awaitLeader polls the replica's status (bounded: two election timeouts
// at most) until it knows a leader other than itself with a client
// address.
func (n *Node) awaitLeader(ctx context.Context) (raft.NodeID, string) {
	ctx, cancel := context.WithTimeout(ctx, 20*n.cfg.TickInterval)
	defer cancel()
	tick := time.NewTicker(n.cfg.TickInterval)
	defer tick.Stop()
	for {
		st, err := n.run.Status(ctx)
		if err != nil {
			return raft.None, ""
		}
		if st.Lead != raft.None && st.Lead != n.cfg.ID {
			if addr := n.tr.ClientAddr(st.Lead); addr != "" {
				return st.Lead, addr
			}
		}
		select {
		case <-ctx.Done():
			return st.Lead, ""
		case <-tick.C:
		}
	}
}

// forward sends the request to the leader and relays its answer. If the
// request never left (the leader could not be reached), the outcome is
// definite; once it was written, a failure leaves it unknown.
func (n *Node) forward(w http.ResponseWriter, r *http.Request, body []byte, e *Error) {
	n.stats.Forwarded.Add(1)
	ctx, cancel := n.requestContext(r)
	relayMax := int64(kv.ValueBytesMax + 1<<16)
	if r.URL.Path == "/v1/backup" {
		// A backup streams the whole store: bounded by the client's
		// patience, not the request timeout.
		cancel()
		ctx, cancel = context.WithCancel(r.Context())
		relayMax = backupBytesMax
	}
	defer cancel()
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, r.Method, n.scheme()+"://"+e.LeaderAddr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		n.fail(w, errorf(CodeInternal, "forwarding: %v", err))
		return
	}
	for _, h := range []string{"If-Match", "If-None-Match", "Content-Type"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set(headerForwarded, strconv.FormatUint(uint64(n.cfg.ID), 10))
	if a, ok := accessOf(r.Context()); ok && n.cfg.TLS != nil {
		// The client this node judged, for the leader to judge again; it
		// takes these only from a member's certificate (auth.go).
		req.Header.Set(headerClient, a.name)
		req.Header.Set(headerClientRole, a.role.String())
	}
	resp, err := n.fwd.Do(req)
	if err != nil {
		if !wrote.Load() || r.Method == http.MethodGet || r.Method == http.MethodHead {
			n.fail(w, &Error{Code: CodeLeaderUnreachable, Message: fmt.Sprintf("forwarding to leader %d at %s: %v", e.Leader, e.LeaderAddr, err), Leader: e.Leader})
			return
		}
		n.fail(w, &Error{Code: CodeUnknown, Message: fmt.Sprintf("forwarded to leader %d, no answer: %v", e.Leader, err), Leader: e.Leader})
		return
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "ETag", "Retry-After", headerIndex, headerBackupTerm, headerBackupHash} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.Header().Set(headerForwarded, strconv.FormatUint(uint64(n.cfg.ID), 10))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, relayMax))
}

// TransferRequest is the body of POST /v1/transfer.
type TransferRequest struct {
	To uint64 `json:"to"`
}

// DecodeTransfer decodes a transfer request strictly: one JSON object with
// only the field "to", a member id, nothing after it, at most 4 KiB.
func DecodeTransfer(b []byte, members map[raft.NodeID]string) (raft.NodeID, error) {
	if len(b) > 4<<10 {
		return 0, fmt.Errorf("body of %d bytes over 4 KiB", len(b))
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var tr TransferRequest
	if err := d.Decode(&tr); err != nil {
		return 0, fmt.Errorf("bad JSON: %w", err)
	}
	if d.More() {
		return 0, errors.New("bad JSON: data after the object")
	}
	if _, ok := members[raft.NodeID(tr.To)]; !ok {
		return 0, fmt.Errorf("transfer to %d: not a member (%s)", tr.To, FormatPeers(members))
	}
	return raft.NodeID(tr.To), nil
}

func (n *Node) handleTransfer(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		n.fail(w, errorf(CodeMethod, "%s %s: only POST", r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		n.fail(w, errorf(CodeTooLarge, "body: %v", err))
		return
	}
	voters := map[raft.NodeID]string{}
	for _, id := range n.inForce().Voters {
		voters[id] = n.memberAddr(id)
	}
	to, err := DecodeTransfer(body, voters)
	if err != nil {
		n.fail(w, errorf(CodeBadRequest, "%v", err))
		return
	}
	ctx, cancel := n.requestContext(r)
	defer cancel()
	st, err := n.run.Status(ctx)
	if err != nil {
		n.fail(w, errorf(CodeBusy, "status: %v", err))
		return
	}
	if to == st.Lead {
		writeJSON(w, http.StatusOK, map[string]any{"leader": uint64(to)})
		return
	}
	if st.Role != raft.RoleLeader {
		e := &Error{Code: CodeNotLeader, Message: "not the leader", Leader: st.Lead}
		if !n.redirectOrForward(w, r, body, e) {
			n.fail(w, e)
		}
		return
	}
	if err := n.transfer(ctx, to); err != nil {
		n.fail(w, errorf(CodeBusy, "the transfer to %d did not complete: %v", to, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"leader": uint64(to)})
}

func (n *Node) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if _, err := n.run.Status(ctx); err != nil {
		n.fail(w, errorf(CodeBusy, "the replica's goroutine did not answer: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "id": uint64(n.cfg.ID)})
}

func (n *Node) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	st, err := n.status(ctx)
	if err != nil {
		n.fail(w, errorf(CodeBusy, "status: %v", err))
		return
	}
	if st.NotServing != "" {
		code := CodeNoLeader
		switch {
		case st.Fence != "" && st.Fence != raft.OutcomeEligible.String():
			code = CodeFenced
		case st.Failure != "" || st.WALFailed:
			code = CodeWALFailed
		}
		n.fail(w, &Error{Code: code, Message: st.NotServing, Leader: raft.NodeID(st.Leader)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ready": true, "id": uint64(n.cfg.ID), "leader": st.Leader, "role": st.Role})
}

func (n *Node) handleStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	st, err := n.status(ctx)
	if err != nil {
		n.fail(w, errorf(CodeBusy, "status: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// handleMembersRoute: GET lists the members, POST changes them.
func (n *Node) handleMembersRoute(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		n.handleMembers(w, r)
	case http.MethodPost:
		n.handleChange(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		n.fail(w, errorf(CodeMethod, "%s %s: GET or POST", r.Method, r.URL.Path))
	}
}

func (n *Node) handleMembers(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	ms, err := n.members(ctx)
	if err != nil {
		n.fail(w, errorf(CodeBusy, "status: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, ms)
}
