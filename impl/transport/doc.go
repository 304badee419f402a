// Package transport is raftd's peer transport over TCP: it implements
// replica.Transport and hands every inbound message to the replica
// runner's Deliver. docs/raftd.md has the frame and message tables.
//
// # Frames and messages
//
// Frames are impl/wire's: version, type, length, payload, CRC-32C over the
// whole frame, a size limit checked before anything is allocated. A
// Messages frame holds a count and the messages; a message is the core's
// header in raft's strict codec (raft.MarshalMessage, without entries),
// and for an AppendEntries the chain value at PrevLogIndex and the WAL
// records of its entries byte for byte. Entries are never encoded apart:
// the receiver decodes them from the records (checksum and framing
// verified here, the chain and the records against its own log by the
// replica), so the bytes a follower appends are the leader's.
//
// With Config.Clock (a traced node: the trace's Lamport clock), every write
// of Messages frames starts with a Clock frame stamped with the clock as
// the writer takes the queue; the acceptor raises its clock to it before it
// delivers the messages after it. Without a Clock one received is ignored.
//
// # Connections
//
// Each node dials each peer once; that connection carries its messages to
// the peer (the acceptor only reads). Send never blocks: it appends to the
// peer's bounded queue (messages and bytes; beyond either, drop and count).
// The peer's writer takes every queued message at once and writes them in
// one write. A failed dial or write drops what was queued (the protocol
// retries) and redials after a jittered backoff that doubles up to a cap;
// a successful handshake resets it.
//
// The handshake: the dialer sends its cluster id, its node id, the node id
// it meant to reach and its client address; the acceptor refuses (with a
// reason the dialer logs, then closes) another cluster id, an id that is
// its own or neither in its address book nor in its peer set (SetPeers:
// a member of the configuration in force is let in before its address is
// known), or a hello meant for another node, and
// otherwise answers with its own id and client address. So each node learns
// its peers' client addresses, for forwarding and redirects.
//
// With TLS (the caller's Listener and Dial), Authenticate holds each side
// to the node it claims or was meant to reach: the dialer checks the
// acceptor's certificate before its hello, the acceptor checks the
// dialer's against the hello's id after it and refuses with the reason;
// an inbound TLS handshake runs first, and its failure is logged as such.
//
// # Bad input
//
// A frame that does not verify, a message that does not decode, or a
// message whose sender or recipient is not the connection's closes the
// connection and is counted (Stats.BadFrames, BadMessages); nothing of it
// reaches the replica.
package transport
