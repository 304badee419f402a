// Command raftd runs one node of a durableraft cluster: a Raft replicated
// log whose acknowledgments mean fdatasync'd on a majority, serving a
// key-value store over HTTP/1.1 and the pipelined client protocol.
//
//	raftd --id 1 --data ./data/1 --listen-client 127.0.0.1:7001 --listen-peer 127.0.0.1:7101 \
//	      --peers 1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103
//
// --peers is read at the first boot only (it is written into the data
// directory with the cluster id). On SIGTERM or SIGINT a leader transfers
// its leadership, then the node stops cleanly. docs/raftd.md lists every
// flag, the API and the outcomes. The --testing-* flags are for tests
// only: they lose unsynced writes on kill, or re-introduce bugs.
package main
