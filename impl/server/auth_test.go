package server

import (
	"errors"
	"net/http"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/tlsauth"
)

// TestAuthorize: the gate's decision table, row by row, without a network.
func TestAuthorize(t *testing.T) {
	const c = 0xc1
	n := &Node{log: quiet}
	member2 := principal{tls: true, what: presentedMember, id: tlsauth.NodeIdentity(c, 2)}
	writer := principal{tls: true, what: presentedClient, id: tlsauth.ClientIdentity(c, "w", tlsauth.RoleWrite)}
	reader := principal{tls: true, what: presentedClient, id: tlsauth.ClientIdentity(c, "r", tlsauth.RoleRead)}
	admin := principal{tls: true, what: presentedClient, id: tlsauth.ClientIdentity(c, "a", tlsauth.RoleAdmin)}
	anonymous := principal{tls: true, what: presentedNone}
	foreign := principal{tls: true, what: presentedForeign, err: errors.New("names cluster c2")}
	fwd := func(by, name, role string) http.Header {
		h := http.Header{}
		h.Set(headerForwarded, by)
		if name != "" {
			h.Set(headerClient, name)
		}
		if role != "" {
			h.Set(headerClientRole, role)
		}
		return h
	}
	rows := []struct {
		name string
		p    principal
		hdr  http.Header
		need tlsauth.Role
		code string // "" allowed
		role tlsauth.Role
	}{
		{"no TLS: anyone, anything", principal{}, http.Header{}, tlsauth.RoleAdmin, "", tlsauth.RoleAdmin},
		{"no TLS: a forwarded header as before", principal{}, fwd("2", "", ""), tlsauth.RoleAdmin, "", tlsauth.RoleAdmin},
		{"no certificate: public", anonymous, http.Header{}, tlsauth.RoleNone, "", tlsauth.RoleNone},
		{"no certificate: a read", anonymous, http.Header{}, tlsauth.RoleRead, CodeUnauthenticated, 0},
		{"no certificate, forwarded", anonymous, fwd("2", "w", "write"), tlsauth.RoleRead, CodeUnauthenticated, 0},
		{"reader reads", reader, http.Header{}, tlsauth.RoleRead, "", tlsauth.RoleRead},
		{"reader writes", reader, http.Header{}, tlsauth.RoleWrite, CodeForbidden, 0},
		{"writer writes", writer, http.Header{}, tlsauth.RoleWrite, "", tlsauth.RoleWrite},
		{"writer transfers", writer, http.Header{}, tlsauth.RoleAdmin, CodeForbidden, 0},
		{"admin transfers", admin, http.Header{}, tlsauth.RoleAdmin, "", tlsauth.RoleAdmin},
		{"a client forwarding", admin, fwd("2", "a", "admin"), tlsauth.RoleRead, CodeForbidden, 0},
		{"a client forwarding, public path", admin, fwd("2", "a", "admin"), tlsauth.RoleNone, "", 0},
		{"a member as a client", member2, http.Header{}, tlsauth.RoleRead, CodeForbidden, 0},
		{"a member on a public path", member2, http.Header{}, tlsauth.RoleNone, "", 0},
		{"a member forwards a writer's write", member2, fwd("2", "w", "write"), tlsauth.RoleWrite, "", tlsauth.RoleWrite},
		{"a member forwards a writer's transfer", member2, fwd("2", "w", "write"), tlsauth.RoleAdmin, CodeForbidden, 0},
		{"a member forwards an admin's transfer", member2, fwd("2", "a", "admin"), tlsauth.RoleAdmin, "", tlsauth.RoleAdmin},
		{"a member forwards as another member", member2, fwd("3", "a", "admin"), tlsauth.RoleRead, CodeForbidden, 0},
		{"a member forwards no client", member2, fwd("2", "", ""), tlsauth.RoleRead, CodeForbidden, 0},
		{"a member forwards a bad role", member2, fwd("2", "a", "root"), tlsauth.RoleRead, CodeForbidden, 0},
		{"a member forwards a bad name", member2, fwd("2", "a b", "read"), tlsauth.RoleRead, CodeForbidden, 0},
		{"another cluster's certificate", foreign, http.Header{}, tlsauth.RoleRead, CodeForbidden, 0},
		{"another cluster's certificate, public", foreign, http.Header{}, tlsauth.RoleNone, "", 0},
	}
	for _, r := range rows {
		a, e := n.authorize(r.p, r.hdr, r.need)
		switch {
		case r.code == "" && e != nil:
			t.Errorf("%s: refused %v", r.name, e)
		case r.code != "" && (e == nil || e.Code != r.code || !e.Definite()):
			t.Errorf("%s: %v, want %s", r.name, e, r.code)
		case r.code == "" && a.role != r.role:
			t.Errorf("%s: role %v, want %v", r.name, a.role, r.role)
		}
	}
}

// TestNeededRole: the routes' roles; a route not in the table (one added
// later: backup, restore, membership) needs admin.
func TestNeededRole(t *testing.T) {
	for _, r := range []struct {
		pattern, method string
		want            tlsauth.Role
	}{
		{"/v1/kv/{key...}", "GET", tlsauth.RoleRead}, {"/v1/kv/{key...}", "HEAD", tlsauth.RoleRead},
		{"/v1/kv/{key...}", "PUT", tlsauth.RoleWrite}, {"/v1/kv/{key...}", "DELETE", tlsauth.RoleWrite},
		{"/v1/kv/{key...}", "POST", tlsauth.RoleWrite}, // answered 405
		{"/v1/status", "GET", tlsauth.RoleRead}, {"/v1/members", "GET", tlsauth.RoleRead}, {"/metrics", "GET", tlsauth.RoleRead},
		{"/v1/members", "POST", tlsauth.RoleAdmin}, {"/v1/transfer", "POST", tlsauth.RoleAdmin},
		{"/v1/backup", "GET", tlsauth.RoleAdmin}, {"/v1/restore", "POST", tlsauth.RoleAdmin},
		{"/v1/snapshot", "GET", tlsauth.RoleAdmin}, {"POST /v1/anything-new", "POST", tlsauth.RoleAdmin},
		{"/healthz", "GET", tlsauth.RoleNone}, {"/readyz", "GET", tlsauth.RoleNone}, {"/", "GET", tlsauth.RoleRead},
	} {
		if got := neededRole(r.pattern, r.method); got != r.want {
			t.Errorf("%s %s: %v, want %v", r.method, r.pattern, got, r.want)
		}
	}
}

// TestTransferOutcome: right after it steps down the old leader knows no
// leader yet; that is not a failed transfer (it was reported as one,
// "stepped down; leader now 0", in about one run in four of
// TestTLSRefusals under -race).
func TestTransferOutcome(t *testing.T) {
	for _, r := range []struct {
		role      raft.Role
		lead      raft.NodeID
		done, bad bool
	}{
		{raft.RoleLeader, 1, false, false},
		{raft.RoleFollower, raft.None, false, false},
		{raft.RoleFollower, 3, true, false},
		{raft.RoleFollower, 2, true, true},
		{raft.RoleCandidate, raft.None, false, false},
	} {
		done, err := transferOutcome(r.role, r.lead, 3)
		if done != r.done || (err != nil) != r.bad {
			t.Errorf("%v lead %d: done %v err %v", r.role, r.lead, done, err)
		}
	}
}
