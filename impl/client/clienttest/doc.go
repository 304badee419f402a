// Package clienttest holds the client-side helpers the tests of whole
// clusters share (impl/server's in-process clusters, conformance/proc's
// real processes): writing many keys through the Go client.
package clienttest
