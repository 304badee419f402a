package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/durableraft/durableraft/impl/kvproto"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/tlsauth"
)

// Headers a member adds when it forwards a request: the identity and the
// role of the client it checked (the leader takes them only from a
// member's certificate, with headerForwarded naming that member).
const (
	headerClient     = "X-Raftd-Client"
	headerClientRole = "X-Raftd-Client-Role"
)

// routeRoles is the role each route needs, by the router's pattern and
// the method ("" for any other method). RoleNone is public: no
// certificate needed. A pattern missing here needs admin: an endpoint
// added later (backup, restore, membership changes) is an admin's until
// this table says otherwise.
var routeRoles = map[string]map[string]tlsauth.Role{
	"/v1/kv/{key...}": {"GET": tlsauth.RoleRead, "HEAD": tlsauth.RoleRead, "": tlsauth.RoleWrite},
	"/v1/status":      {"": tlsauth.RoleRead},
	"/v1/members":     {"GET": tlsauth.RoleRead, "HEAD": tlsauth.RoleRead, "": tlsauth.RoleAdmin}, // POST: a membership change
	"/v1/transfer":    {"": tlsauth.RoleAdmin},
	"/v1/backup":      {"": tlsauth.RoleAdmin},
	"/v1/restore":     {"": tlsauth.RoleAdmin},
	"/healthz":        {"": tlsauth.RoleNone},
	"/readyz":         {"": tlsauth.RoleNone},
	"/metrics":        {"": tlsauth.RoleRead}, // as much as /v1/status says
	"/v1/statehash":   {"": tlsauth.RoleRead}, // the state check's (a member asks as a forwarder)
	"/":               {"": tlsauth.RoleRead}, // no such path: a reader is told 404
}

// neededRole looks a request up in routeRoles.
func neededRole(pattern, method string) tlsauth.Role {
	byMethod, ok := routeRoles[pattern]
	if !ok {
		return tlsauth.RoleAdmin
	}
	if r, ok := byMethod[method]; ok {
		return r
	}
	if r, ok := byMethod[""]; ok {
		return r
	}
	return tlsauth.RoleAdmin
}

// opRoles is the role each pipelined operation needs.
var opRoles = map[kvproto.Op]tlsauth.Role{
	kvproto.OpCommand:   tlsauth.RoleWrite,
	kvproto.OpRead:      tlsauth.RoleRead,
	kvproto.OpStaleRead: tlsauth.RoleRead,
}

// presenter is what the other side of a client connection presented.
type presenter uint8

const (
	presentedNone    presenter = iota // no certificate
	presentedClient                   // a client's certificate of this cluster
	presentedMember                   // a member's certificate of this cluster
	presentedForeign                  // a certificate naming no identity of this cluster
)

// principal is the other side of one client connection, found once at
// its TLS handshake.
type principal struct {
	tls  bool // TLS is on; without it nobody is asked
	what presenter
	id   tlsauth.Identity
	err  error // presentedForeign: why
}

// decision is one row of authTable: how a request is judged.
type decision uint8

const (
	judgeByCertificate decision = iota + 1 // the client certificate's role
	judgeByForwarder                       // the role the forwarding member passed on
	publicOnly                             // only what needs no role
)

// authTable: what presented, forwarded or not, is judged how; the message
// is the refusal of anything beyond the public paths.
var authTable = map[presenter][2]struct {
	how  decision
	code string
	why  string
}{
	//                  not forwarded                                          forwarded (X-Raftd-Forwarded-By)
	presentedNone: {{publicOnly, CodeUnauthenticated, "a client certificate is required (docs/security.md)"},
		{publicOnly, CodeUnauthenticated, "a forwarded request is accepted only from a member"}},
	presentedClient: {{judgeByCertificate, "", ""},
		{publicOnly, CodeForbidden, "a forwarded request is accepted only from a member, not from a client"}},
	presentedMember: {{publicOnly, CodeForbidden, "a member's certificate is not a client certificate"},
		{judgeByForwarder, "", ""}},
	presentedForeign: {{publicOnly, CodeForbidden, "the certificate names no client of this cluster"},
		{publicOnly, CodeForbidden, "the certificate names no member of this cluster"}},
}

// access is the result of judging a request: who asked (for log lines and
// for a forward), with which role.
type access struct {
	who  string
	name string
	role tlsauth.Role
}

// authorize judges one HTTP request that needs need; forwardedBy is the
// X-Raftd-Forwarded-By header.
func (n *Node) authorize(p principal, hdr http.Header, need tlsauth.Role) (access, *Error) {
	if !p.tls {
		return access{who: "anyone (no TLS)", role: tlsauth.RoleAdmin}, nil
	}
	fwd := hdr.Get(headerForwarded)
	row := authTable[p.what][boolIndex(fwd != "")]
	a := access{who: p.describe()}
	switch row.how {
	case judgeByCertificate:
		a.name, a.role = p.id.Name, p.id.Role
	case judgeByForwarder:
		var err error
		if a, err = forwardedAccess(p, hdr); err != nil {
			return a, errorf(CodeForbidden, "%v", err)
		}
	case publicOnly:
		if need == tlsauth.RoleNone {
			return a, nil
		}
		msg := row.why
		if p.err != nil {
			msg += ": " + p.err.Error()
		}
		return a, errorf(row.code, "%s", msg)
	}
	if !a.role.Allows(need) {
		return a, errorf(CodeForbidden, "%s has the role %s; this needs %s", a.who, a.role, need)
	}
	return a, nil
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// forwardedAccess reads the client a member passed on: the forwarder's
// header names the member of the certificate, and the client's name and
// role are valid.
func forwardedAccess(p principal, hdr http.Header) (access, error) {
	by, err := strconv.ParseUint(hdr.Get(headerForwarded), 10, 64)
	if err != nil || by != p.id.Node {
		return access{who: p.describe()}, fmt.Errorf("%s forwards as node %q", p.describe(), hdr.Get(headerForwarded))
	}
	name := hdr.Get(headerClient)
	role, rerr := tlsauth.ParseRole(hdr.Get(headerClientRole))
	if err := tlsauth.ValidName(name); err != nil || rerr != nil {
		return access{who: p.describe()}, fmt.Errorf("%s forwards no valid client identity (%q, %q)", p.describe(), name, hdr.Get(headerClientRole))
	}
	return access{who: fmt.Sprintf("client %s (%s) forwarded by node %d", name, role, by), name: name, role: role}, nil
}

func (p principal) describe() string {
	switch p.what {
	case presentedNone:
		return "a client without a certificate"
	case presentedForeign:
		return "a certificate of no identity here"
	}
	return p.id.String()
}

// authorizeOp judges one pipelined request (no forwarding there).
func (n *Node) authorizeOp(p principal, op kvproto.Op) *Error {
	_, e := n.authorize(p, http.Header{}, opRoles[op])
	return e
}

// refused logs a refusal (the caller counts it).
func (n *Node) refused(p principal, remote, what string, e *Error) {
	n.log.Warn("server: request refused", "who", p.describe(), "request", what, "remote", remote, "code", e.Code, "why", e.Message)
}

// authContext carries the connection's principal to the HTTP handlers.
type authContext struct{}

func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(authContext{}).(principal)
	return p
}

// withAuth is the HTTP API's gate: it finds the route's pattern, judges
// the request, and refuses it or passes it on with its access.
func (n *Node) withAuth(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := mux.Handler(r)
		p := principalOf(r.Context())
		a, e := n.authorize(p, r.Header, neededRole(pattern, r.Method))
		if e != nil {
			n.stats.AuthRefused.Add(1)
			n.refused(p, r.RemoteAddr, r.Method+" "+r.URL.Path, e)
			n.fail(w, e)
			return
		}
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accessContext{}, a)))
	})
}

type accessContext struct{}

func accessOf(ctx context.Context) (access, bool) {
	a, ok := ctx.Value(accessContext{}).(access)
	return a, ok
}

// identify runs the TLS handshake of a client connection (bounded) and
// finds its principal; a failed handshake is logged, counted, and ends
// the connection.
func (n *Node) identify(c net.Conn) (principal, error) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return principal{}, nil
	}
	ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		n.stats.TLSHandshakesFailed.Add(1)
		if !errors.Is(err, io.EOF) {
			n.log.Warn("server: client refused: the TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		}
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && plainHTTP[string(re.RecordHeader[:])] {
			// As net/http does: tell a plain HTTP client (curl without
			// https://) what it reached.
			_ = re.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\n\r\n"+
				"Client sent an HTTP request to an HTTPS server: this raftd speaks TLS (https://, a client certificate; docs/security.md)\n")
		}
		return principal{}, err
	}
	p := principal{tls: true}
	id, has, err := n.cfg.TLS.Identify(tc.ConnectionState())
	switch {
	case !has:
		p.what = presentedNone
	case err != nil:
		p.what, p.err = presentedForeign, err
	case id.Kind == tlsauth.KindNode:
		p.what, p.id = presentedMember, id
	default:
		p.what, p.id = presentedClient, id
	}
	return p, nil
}

// plainHTTP: the first five bytes of plain HTTP requests.
var plainHTTP = map[string]bool{"GET /": true, "HEAD ": true, "POST ": true, "PUT /": true, "DELET": true, "OPTIO": true}

// checkIdentity: the store's certificate is this node's, of this cluster.
func checkIdentity(s *tlsauth.Store, id raft.NodeID, cluster uint64) error {
	want := tlsauth.NodeIdentity(cluster, uint64(id))
	if got := s.Identity(); got != want {
		return fmt.Errorf("the TLS certificate names %s; this is %s", got, want)
	}
	return nil
}

// checkBinds: without TLS, only loopback addresses, unless insecure.
func checkBinds(cfg *Config) error {
	if cfg.TLS != nil || cfg.Insecure {
		return nil
	}
	for _, b := range []struct{ what, addr string }{{"--listen-client", cfg.ClientAddr}, {"--listen-peer", cfg.PeerAddr}} {
		if err := tlsauth.CheckLoopback(b.addr); err != nil {
			return fmt.Errorf("%s %s: %v, and TLS is off: anyone who reaches it could %s. Give --tls-ca, --tls-cert and --tls-key (docs/security.md), or --insecure to listen there without TLS",
				b.what, b.addr, err, map[string]string{"--listen-client": "read and write every key", "--listen-peer": "speak as a member"}[b.what])
		}
	}
	return nil
}

// listen makes a listener (Config.Listen) and, with TLS, wraps it.
func (n *Node) listen(addr string, auth tlsauth.ClientAuth) (net.Listener, error) {
	l, err := n.cfg.Listen(addr)
	if err != nil || n.cfg.TLS == nil {
		return l, err
	}
	return tls.NewListener(l, n.cfg.TLS.ServerConfig(auth)), nil
}

// scheme is the client API's URL scheme.
func (n *Node) scheme() string {
	if n.cfg.TLS != nil {
		return "https"
	}
	return "http"
}

// forwardTransport is the HTTP transport a follower forwards with: with
// TLS, this node's certificate, and the leader's checked to be the member
// whose client address was dialled.
func (n *Node) forwardTransport() *http.Transport {
	t := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	if n.cfg.TLS == nil {
		return t
	}
	dial := n.cfg.TLS.Dialer(2*time.Second, func(addr string, id tlsauth.Identity) error {
		if want := n.tr.ClientAddr(raft.NodeID(id.Node)); want != addr {
			return fmt.Errorf("the server at %s presents the certificate of node %d, whose client address is %q", addr, id.Node, want)
		}
		return nil
	})
	t.DialTLSContext = func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) }
	return t
}
