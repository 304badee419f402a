package tlsauth

import (
	"crypto/x509"
	"net/url"
	"strings"
	"testing"
)

func TestParseIdentityURI(t *testing.T) {
	const c = "00000000000000c1"
	rows := []struct {
		uri  string
		want Identity
		bad  string // part of the error, when it must fail
	}{
		{uri: "durableraft://" + c + "/node/2", want: NodeIdentity(0xc1, 2)},
		{uri: "durableraft://" + c + "/client/read/alice", want: ClientIdentity(0xc1, "alice", RoleRead)},
		{uri: "durableraft://" + c + "/client/write/svc-1.prod@eu", want: ClientIdentity(0xc1, "svc-1.prod@eu", RoleWrite)},
		{uri: "durableraft://" + c + "/client/admin/ops", want: ClientIdentity(0xc1, "ops", RoleAdmin)},
		{uri: "spiffe://" + c + "/node/2", bad: "not a durableraft identity"},
		{uri: "durableraft://00000000000000C1/node/2", bad: "lowercase"},
		{uri: "durableraft://0000000000000000/node/2", bad: "not zero"},
		{uri: "durableraft://c1/node/2", bad: "16 lowercase hex"},
		{uri: "durableraft://" + c + ":99/node/2", bad: "not a durableraft identity"},
		{uri: "durableraft://u@" + c + "/node/2", bad: "not a durableraft identity"},
		{uri: "durableraft://" + c + "/node/2?x=1", bad: "not a durableraft identity"},
		{uri: "durableraft://" + c + "/node/2#f", bad: "not a durableraft identity"},
		{uri: "durableraft://" + c + "/node/0", bad: "bad node identity"},
		{uri: "durableraft://" + c + "/node/02", bad: "bad node id"},
		{uri: "durableraft://" + c + "/node/-2", bad: "bad node id"},
		{uri: "durableraft://" + c + "/node/2/x", bad: "the path is"},
		{uri: "durableraft://" + c + "/node", bad: "the path is"},
		{uri: "durableraft://" + c + "/client/root/alice", bad: "role"},
		{uri: "durableraft://" + c + "/client/none/alice", bad: "role"},
		{uri: "durableraft://" + c + "/client/read/", bad: "client name of 0 bytes"},
		{uri: "durableraft://" + c + "/client/read/al%20ice", bad: "only letters"},
		{uri: "durableraft://" + c + "/client/read/al%2Fice", bad: "not a durableraft identity"},
		{uri: "durableraft://" + c + "/client/read/" + strings.Repeat("a", NameBytesMax+1), bad: "1..64"},
		{uri: "durableraft://" + c + "/peer/2", bad: "the path is"},
		{uri: "durableraft:" + c + "/node/2", bad: "not a durableraft identity"},
	}
	for _, r := range rows {
		got, err := ParseIdentityURI(r.uri)
		if r.bad != "" {
			if err == nil || !strings.Contains(err.Error(), r.bad) {
				t.Errorf("%s: %+v, %v; want an error with %q", r.uri, got, err, r.bad)
			}
			continue
		}
		if err != nil || got != r.want {
			t.Errorf("%s: %+v, %v; want %+v", r.uri, got, err, r.want)
			continue
		}
		if back := got.URI().String(); back != r.uri {
			t.Errorf("%s: URI() gives %s", r.uri, back)
		}
	}
}

func FuzzParseIdentityURI(f *testing.F) {
	f.Add("durableraft://00000000000000c1/node/2")
	f.Add("durableraft://00000000000000c1/client/write/alice")
	f.Add("durableraft://00000000000000c1/client/admin/a%40b")
	f.Add("durableraft://x/../node/1")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseIdentityURI(s)
		if err != nil {
			return
		}
		if err := id.Valid(); err != nil {
			t.Fatalf("%q parsed to an invalid %+v: %v", s, id, err)
		}
		again, err := ParseIdentityURI(id.URI().String())
		if err != nil || again != id {
			t.Fatalf("%q: %+v does not round-trip: %+v %v", s, id, again, err)
		}
	})
}

func TestRoles(t *testing.T) {
	for _, r := range []struct {
		have, need Role
		ok         bool
	}{
		{RoleRead, RoleRead, true}, {RoleRead, RoleWrite, false}, {RoleRead, RoleAdmin, false},
		{RoleWrite, RoleRead, true}, {RoleWrite, RoleWrite, true}, {RoleWrite, RoleAdmin, false},
		{RoleAdmin, RoleAdmin, true}, {RoleAdmin, RoleRead, true}, {RoleNone, RoleRead, false}, {RoleNone, RoleNone, true},
		{Role(9), RoleRead, false},
	} {
		if got := r.have.Allows(r.need); got != r.ok {
			t.Errorf("%v allows %v: %v, want %v", r.have, r.need, got, r.ok)
		}
	}
	for _, s := range []string{"read", "write", "admin"} {
		if r, err := ParseRole(s); err != nil || r.String() != s {
			t.Errorf("%s: %v %v", s, r, err)
		}
	}
	if _, err := ParseRole("none"); err == nil {
		t.Error("the role none parsed")
	}
}

// TestIdentityOf: a certificate names exactly one identity, and a CA's
// names none.
func TestIdentityOf(t *testing.T) {
	u := func(s string) *url.URL { v, _ := url.Parse(s); return v }
	node, other := u("durableraft://00000000000000c1/node/1"), u("durableraft://00000000000000c1/node/2")
	for _, r := range []struct {
		name string
		c    x509.Certificate
		bad  string
	}{
		{"one", x509.Certificate{URIs: []*url.URL{node, u("https://example.com/x")}}, ""},
		{"none", x509.Certificate{URIs: []*url.URL{u("https://example.com/x")}}, "names no"},
		{"two", x509.Certificate{URIs: []*url.URL{node, other}}, "2 identities"},
		{"ca", x509.Certificate{URIs: []*url.URL{node}, IsCA: true}, "a CA's"},
	} {
		_, err := IdentityOf(&r.c)
		if (r.bad == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), r.bad) {
			t.Errorf("%s: %v, want %q", r.name, err, r.bad)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, r := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:7001", true}, {"127.1.2.3:0", true}, {"[::1]:7001", true}, {"localhost:7001", true},
		{"0.0.0.0:7001", false}, {":7001", false}, {"[::]:7001", false}, {"10.0.0.1:7001", false}, {"192.168.1.5:1", false},
		{"127.0.0.1", false},
	} {
		err := CheckLoopback(r.addr)
		if (err == nil) != r.ok {
			t.Errorf("%s: %v, want ok=%v", r.addr, err, r.ok)
		}
	}
}
