package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
)

// TestHTTPAPI: the API table of docs/raftd.md, row by row, on a 3-node
// cluster, each request sent to a follower (forwarded) and to the leader.
func TestHTTPAPI(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	lead := tc.leader()
	follower := raft.NodeID(1)
	if follower == lead {
		follower = 2
	}
	r := do(t, "PUT", tc.url(follower, "/v1/kv/a/b c"), "v1")
	if r.status != 200 || r.header.Get("ETag") == "" || r.header.Get(headerForwarded) == "" {
		t.Fatalf("PUT via a follower: %d %q %v", r.status, r.body, r.header)
	}
	etagV1 := r.header.Get("ETag")
	for id := raft.NodeID(1); id <= 3; id++ {
		g := do(t, "GET", tc.url(id, "/v1/kv/a/b%20c"), "")
		if g.status != 200 || g.body != "v1" || g.header.Get("ETag") != etagV1 {
			t.Fatalf("GET from %d: %d %q etag %q want %q", id, g.status, g.body, g.header.Get("ETag"), etagV1)
		}
	}
	rows := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		code                     string
	}{
		{"get absent", "GET", "/v1/kv/nope", "", nil, 404, CodeNotFound},
		{"cas wrong revision", "PUT", "/v1/kv/a/b c", "v2", []string{"If-Match", `"1"`}, 409, CodeMismatch},
		{"cas right revision", "PUT", "/v1/kv/a/b c", "v2", []string{"If-Match", etagV1}, 200, ""},
		{"create only, present", "PUT", "/v1/kv/a/b c", "v3", []string{"If-None-Match", "*"}, 409, CodeMismatch},
		{"create only, absent", "PUT", "/v1/kv/fresh", "v", []string{"If-None-Match", "*"}, 200, ""},
		{"bad If-Match", "PUT", "/v1/kv/x", "v", []string{"If-Match", "abc"}, 400, CodeBadRequest},
		{"bad If-None-Match", "PUT", "/v1/kv/x", "v", []string{"If-None-Match", `"3"`}, 400, CodeBadRequest},
		{"empty key", "PUT", "/v1/kv/", "v", nil, 400, CodeBadRequest},
		{"key too long", "GET", "/v1/kv/" + strings.Repeat("k", kv.KeyBytesMax+1), "", nil, 413, CodeTooLarge},
		{"value too large", "PUT", "/v1/kv/big", strings.Repeat("x", kv.ValueBytesMax+1), nil, 413, CodeTooLarge},
		{"value at the limit", "PUT", "/v1/kv/big", strings.Repeat("x", kv.ValueBytesMax), nil, 200, ""},
		{"delete", "DELETE", "/v1/kv/fresh", "", nil, 204, ""},
		{"delete absent", "DELETE", "/v1/kv/fresh", "", nil, 404, CodeNotFound},
		{"delete if wrong revision", "DELETE", "/v1/kv/big", "", []string{"If-Match", "1"}, 409, CodeMismatch},
		{"method on a key", "POST", "/v1/kv/x", "", nil, 405, CodeMethod},
		{"method on status", "DELETE", "/v1/status", "", nil, 405, CodeMethod},
		{"no such path", "GET", "/v2/kv/x", "", nil, 404, CodeNoSuchPath},
		{"transfer bad JSON", "POST", "/v1/transfer", `{"to":`, nil, 400, CodeBadRequest},
		{"transfer unknown field", "POST", "/v1/transfer", `{"to":2,"x":1}`, nil, 400, CodeBadRequest},
		{"transfer not a member", "POST", "/v1/transfer", `{"to":9}`, nil, 400, CodeBadRequest},
		{"transfer trailing data", "POST", "/v1/transfer", `{"to":2} {}`, nil, 400, CodeBadRequest},
	}
	// Each row once, alternately through the follower (forwarded) and the
	// leader.
	for k, row := range rows {
		id := []raft.NodeID{follower, lead}[k%2]
		r := do(t, row.method, tc.url(id, row.path), row.body, row.hdr...)
		if r.status != row.status {
			t.Errorf("%s via %d: %d %s, want %d", row.name, id, r.status, r.body, row.status)
			continue
		}
		if row.code == "" {
			continue
		}
		var e errorBody
		if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Code != row.code || e.Outcome != "definite" || e.Message == "" {
			t.Errorf("%s via %d: body %q (%v), want code %s, definite", row.name, id, r.body, err, row.code)
		}
	}
	// 307 when asked: the Location is the leader's, method and path kept.
	r = do(t, "PUT", tc.url(follower, "/v1/kv/r?redirect=true"), "v")
	if r.status != 307 || r.header.Get("Location") != "http://"+tc.clients[lead]+"/v1/kv/r?redirect=true" {
		t.Fatalf("redirect: %d %v", r.status, r.header)
	}
	// Status, members, health, readiness.
	var st StatusBody
	if r := do(t, "GET", tc.url(follower, "/v1/status"), ""); r.status != 200 || json.Unmarshal([]byte(r.body), &st) != nil {
		t.Fatalf("status: %d %s", r.status, r.body)
	}
	if st.Leader != uint64(lead) || st.Role != "Follower" || st.NotServing != "" || st.Fence != "ELIGIBLE" || st.Applied == 0 || st.Testing.LossyFS {
		t.Fatalf("status: %+v", st)
	}
	var ms []Member
	if r := do(t, "GET", tc.url(lead, "/v1/members"), ""); r.status != 200 || json.Unmarshal([]byte(r.body), &ms) != nil || len(ms) != 3 {
		t.Fatalf("members: %d %s", r.status, r.body)
	}
	for _, m := range ms {
		if m.ClientAddr != tc.clients[raft.NodeID(m.ID)] || m.Leader != (raft.NodeID(m.ID) == lead) || !m.Connected {
			t.Fatalf("member %+v", m)
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := do(t, "GET", tc.url(follower, p), ""); r.status != 200 {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
	}
	// Transfer leadership to the follower, through the follower.
	if r := do(t, "POST", tc.url(follower, "/v1/transfer"), `{"to":`+itoa(follower)+`}`); r.status != 200 {
		t.Fatalf("transfer: %d %s", r.status, r.body)
	}
	if got := tc.leader(); got != follower {
		t.Fatalf("leader %d after the transfer to %d", got, follower)
	}
}

func itoa(id raft.NodeID) string { return string(rune('0' + id)) }

// FuzzDecodeTransfer: the one JSON request body decodes strictly, never
// panics, and accepts only member ids.
func FuzzDecodeTransfer(f *testing.F) {
	for _, s := range []string{`{"to":2}`, `{"to":9}`, `{"to":2,"x":1}`, `{"to":"2"}`, `[]`, `{"to":2}{}`, ``, `{"to":-1}`} {
		f.Add([]byte(s))
	}
	members := map[raft.NodeID]string{1: "a", 2: "b", 3: "c"}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := DecodeTransfer(b, members)
		if err == nil {
			if _, ok := members[id]; !ok {
				t.Fatalf("accepted %d, not a member", id)
			}
		}
	})
}

// FuzzParseRevision: If-Match values either parse to one revision in
// 1..2^62 or are refused; never a panic.
func FuzzParseRevision(f *testing.F) {
	for _, s := range []string{`"3"`, `3`, `W/"3"`, `"0"`, `"`, `""`, `"18446744073709551615"`, `*`, ` "7" `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseRevision(s)
		if err == nil && (v == 0 || v > kv.RevisionMax) {
			t.Fatalf("%q parsed to %d", s, v)
		}
	})
}
