// Command raftctl is the operator's and user's tool for a raftd cluster:
// put, get, delete and cas through the Go client (sessions: a retried
// write applies once), status and members over HTTP, leadership transfer,
// a load generator (bench), and wal inspect, which decodes and verifies a
// stopped node's data directory offline without changing it (files,
// recovery verdict and rows, hard state, the hash chain record by record).
// Run raftctl -h for the commands; docs/raftd.md has examples.
package main
