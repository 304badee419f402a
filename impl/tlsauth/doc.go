// Package tlsauth is raftd's security layer: mutual TLS 1.3 from a cluster
// CA, the identities certificates carry, the roles of clients, and a
// credential store that reloads certificates and the CA bundle on change
// without a restart. docs/security.md is the operator's guide.
//
// # Identities
//
// Every certificate a cluster issues names exactly one identity in a URI
// subject alternative name:
//
//	durableraft://<cluster id, 16 hex>/node/<id>             a member (peer)
//	durableraft://<cluster id, 16 hex>/client/<role>/<name>  a client: read, write or admin
//
// A peer's certificate must name the node id it claims in the transport's
// hello, and the cluster id of the node it speaks to; a client certificate
// never speaks as a peer, and a peer certificate is never a client's. The
// CA certificate names the cluster (durableraft://<cluster id>), so that
// `raftctl cert` issues node and client certificates for the right one.
// Hostnames are not how members know each other: a dialer checks that the
// certificate chains to the CA bundle and names the node it meant to
// reach. Node certificates still carry DNS and IP names, for curl and other
// clients that verify hostnames.
//
// # Reload
//
// Store.current is called at every TLS handshake (GetConfigForClient on
// the listeners, GetClientCertificate and VerifyConnection on the
// dialers). It stats the CA bundle, the certificate and the key; when one
// changed (device, inode, size, modification or change time) it reads the
// three again, and a file whose change time is too recent for its stamp to
// be trusted (within racyWindow of the last look, as git treats a racily
// clean index entry) is compared by content. A new set is used only when
// it is whole: the key matches the certificate, the certificate chains to
// the new bundle, is valid now and names the same identity; otherwise the
// set in use stays, the failure is logged once and counted, and the next
// handshake tries again. Connections made before a reload are not touched:
// TLS 1.3 has no renegotiation, and they keep working until they
// reconnect.
//
// # Roles
//
// read < write < admin: each includes the ones before it. What needs which
// is the server's table (impl/server, auth.go).
package tlsauth
