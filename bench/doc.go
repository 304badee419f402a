// Package bench is the module of the benchmarks that compare raftd with
// other systems (cmd/raftbench: raftd against etcd and a no-op server,
// docs/performance.md). It is a module of its own so that the clients of
// those systems (etcd's go.etcd.io/etcd/client/v3, with gRPC and protobuf
// behind it) never enter the server's dependencies: the root module's
// go.mod does not name them, and `go test ./...` there does not see this
// directory.
package bench
