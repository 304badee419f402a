// Command raftbench measures durable writes side by side in one run
// (issue 17; docs/performance.md): a 3-node raftd cluster over its
// pipelined protocol (impl/client) and over its HTTP API, a no-op server
// behind the same HTTP API (it acknowledges without consensus or disk: the
// ceiling of the HTTP stack alone), and a 3-node etcd cluster (Debian's
// etcd-server, default settings, driven by etcd's own Go client), every
// cluster on 127.0.0.1 with each member's data directory on the real disk.
// For each client count it prints one line of writes/s and latency
// percentiles per system and one line of ratios:
//
//	clients=N raftd_http=W raftd_pipelined=W etcd=W noop_http=W http_over_noop=R pipelined_over_etcd=R p99_pipelined_over_etcd=R ...
//
// Every write is a 100-byte value to a distinct key; an acknowledged write
// is fdatasync'd on a majority in both raftd and etcd (raftd refuses to be
// benchmarked with a test switch on: its /v1/status says so; etcd runs
// with its defaults, fsync on). Without etcd on PATH the etcd fields are
// na, said in one line.
//
// raftbench noop-serve ADDR is the no-op server (run by raftbench as a
// process of its own, like the clusters).
package main
