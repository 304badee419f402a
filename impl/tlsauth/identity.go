package tlsauth

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Scheme is the URI scheme of identities.
const Scheme = "durableraft"

// Role is what a client may do; each role includes the ones before it.
// RoleNone (0) is no role at all: a request that needs none is public.
type Role uint8

// Roles.
const (
	RoleNone  Role = iota // no certificate, or not a client's
	RoleRead              // reads, status, members
	RoleWrite             // and writes
	RoleAdmin             // and backup, restore, leadership transfer, membership
)

var roleNames = [...]string{RoleNone: "none", RoleRead: "read", RoleWrite: "write", RoleAdmin: "admin"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// ParseRole parses read, write or admin.
func ParseRole(s string) (Role, error) {
	for r := RoleRead; r <= RoleAdmin; r++ {
		if roleNames[r] == s {
			return r, nil
		}
	}
	return RoleNone, fmt.Errorf("tlsauth: role %q: read, write or admin", s)
}

// Allows reports whether r includes need.
func (r Role) Allows(need Role) bool { return r >= need && r <= RoleAdmin }

// Kind tells a member's certificate from a client's.
type Kind uint8

// Kinds.
const (
	KindNode   Kind = iota + 1 // a member: speaks on the peer port, forwards
	KindClient                 // a client with a role
)

// Identity is who a certificate names.
//
// Invariants: Cluster != 0; KindNode has Node != 0, no Name, RoleNone;
// KindClient has Node == 0, a valid Name and a Role in read..admin.
type Identity struct {
	Kind    Kind
	Cluster uint64
	Node    uint64
	Name    string
	Role    Role
}

// NodeIdentity and ClientIdentity build identities (unchecked: Valid says).
func NodeIdentity(cluster, node uint64) Identity {
	return Identity{Kind: KindNode, Cluster: cluster, Node: node}
}

func ClientIdentity(cluster uint64, name string, role Role) Identity {
	return Identity{Kind: KindClient, Cluster: cluster, Name: name, Role: role}
}

// NameBytesMax bounds a client's name.
const NameBytesMax = 64

// ValidName: 1..64 bytes of letters, digits, '.', '_', '-' and '@', so
// that a name is safe in a log line, a header and a URI path.
func ValidName(s string) error {
	if len(s) == 0 || len(s) > NameBytesMax {
		return fmt.Errorf("tlsauth: client name of %d bytes: 1..%d", len(s), NameBytesMax)
	}
	for k := 0; k < len(s); k++ {
		c := s[k]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '@') {
			return fmt.Errorf("tlsauth: client name %q: only letters, digits and . _ - @", s)
		}
	}
	return nil
}

// Valid checks the invariants.
func (id Identity) Valid() error {
	if id.Cluster == 0 {
		return errors.New("tlsauth: identity without a cluster id")
	}
	switch id.Kind {
	case KindNode:
		if id.Node == 0 || id.Name != "" || id.Role != RoleNone {
			return fmt.Errorf("tlsauth: bad node identity %+v", id)
		}
	case KindClient:
		if id.Node != 0 || id.Role < RoleRead || id.Role > RoleAdmin {
			return fmt.Errorf("tlsauth: bad client identity %+v", id)
		}
		return ValidName(id.Name)
	default:
		return fmt.Errorf("tlsauth: identity of kind %d", id.Kind)
	}
	return nil
}

// String names the identity for log lines and errors.
func (id Identity) String() string {
	switch id.Kind {
	case KindNode:
		return fmt.Sprintf("node %d of cluster %016x", id.Node, id.Cluster)
	case KindClient:
		return fmt.Sprintf("client %s (%s) of cluster %016x", id.Name, id.Role, id.Cluster)
	}
	return "no identity"
}

// URI is the identity's subject alternative name.
func (id Identity) URI() *url.URL {
	u := &url.URL{Scheme: Scheme, Host: fmt.Sprintf("%016x", id.Cluster)}
	switch id.Kind {
	case KindNode:
		u.Path = "/node/" + strconv.FormatUint(id.Node, 10)
	case KindClient:
		u.Path = "/client/" + id.Role.String() + "/" + id.Name
	}
	return u
}

// clusterURI is the CA certificate's name of its cluster.
func clusterURI(cluster uint64) *url.URL {
	return &url.URL{Scheme: Scheme, Host: fmt.Sprintf("%016x", cluster)}
}

// parseCluster parses 16 lowercase hex digits, not zero.
func parseCluster(s string) (uint64, error) {
	if len(s) != 16 || strings.ToLower(s) != s {
		return 0, fmt.Errorf("tlsauth: cluster id %q: 16 lowercase hex digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("tlsauth: cluster id %q: 16 lowercase hex digits, not zero", s)
	}
	return v, nil
}

// ParseIdentityURI parses an identity URI strictly: the scheme, a cluster
// id, /node/<id> or /client/<role>/<name>, nothing else (no user, port,
// query or fragment), and the result Valid.
func ParseIdentityURI(s string) (Identity, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Identity{}, fmt.Errorf("tlsauth: identity %q: %w", s, err)
	}
	if u.Scheme != Scheme || u.Opaque != "" || u.User != nil || u.Port() != "" || u.RawQuery != "" || u.Fragment != "" || u.RawPath != "" {
		return Identity{}, fmt.Errorf("tlsauth: %q is not a %s identity", s, Scheme)
	}
	cluster, err := parseCluster(u.Host)
	if err != nil {
		return Identity{}, err
	}
	parts := strings.Split(u.Path, "/")
	var id Identity
	switch {
	case len(parts) == 3 && parts[0] == "" && parts[1] == "node":
		n, err := strconv.ParseUint(parts[2], 10, 64)
		if err != nil || strconv.FormatUint(n, 10) != parts[2] {
			return Identity{}, fmt.Errorf("tlsauth: identity %q: bad node id", s)
		}
		id = NodeIdentity(cluster, n)
	case len(parts) == 4 && parts[0] == "" && parts[1] == "client":
		r, err := ParseRole(parts[2])
		if err != nil {
			return Identity{}, err
		}
		id = ClientIdentity(cluster, parts[3], r)
	default:
		return Identity{}, fmt.Errorf("tlsauth: identity %q: the path is /node/ID or /client/ROLE/NAME", s)
	}
	if err := id.Valid(); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// IdentityOf returns the identity a leaf certificate names: exactly one
// URI of the scheme, none of another.
func IdentityOf(c *x509.Certificate) (Identity, error) {
	var found []string
	for _, u := range c.URIs {
		if u.Scheme == Scheme {
			found = append(found, u.String())
		}
	}
	switch len(found) {
	case 0:
		return Identity{}, fmt.Errorf("tlsauth: certificate %q names no %s identity", c.Subject.CommonName, Scheme)
	case 1:
	default:
		return Identity{}, fmt.Errorf("tlsauth: certificate %q names %d identities: %v", c.Subject.CommonName, len(found), found)
	}
	if c.IsCA {
		return Identity{}, fmt.Errorf("tlsauth: certificate %q is a CA's", c.Subject.CommonName)
	}
	return ParseIdentityURI(found[0])
}

// clusterOfCA returns the cluster a CA certificate names.
func clusterOfCA(c *x509.Certificate) (uint64, error) {
	for _, u := range c.URIs {
		if u.Scheme == Scheme && (u.Path == "" || u.Path == "/") && u.RawQuery == "" {
			return parseCluster(u.Host)
		}
	}
	return 0, fmt.Errorf("tlsauth: CA certificate %q names no cluster (%s://<cluster id>)", c.Subject.CommonName, Scheme)
}
