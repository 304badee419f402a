// Package wire is the frame format that raftd speaks on TCP: between peers
// (impl/transport) and between clients and servers (the pipelined client
// protocol of impl/server and impl/client). docs/raftd.md has the table.
//
// A frame is
//
//	version  u8      1
//	type     u8      what the payload is (the user's table: 1..255)
//	reserved u16     0
//	length   u32 LE  payload bytes, at most the reader's limit
//	payload  length bytes
//	checksum u32 LE  CRC-32C (Castagnoli) of every byte before it
//
// A [Reader] is strict: an unknown version, a reserved field not zero, a
// length over its limit (checked before anything is allocated) or a
// checksum that does not verify is an error wrapping [ErrFrame], and the
// caller closes the connection: after one bad frame nothing later on the
// stream can be trusted to be framed right. [Writer] appends frames to one
// buffer so that every message ready at once leaves in one write.
//
// The payload helpers ([Encoder], [Decoder]) give the peer and client
// payloads one strict style: fixed-width little-endian integers, u32
// length-prefixed byte strings checked against the bytes that remain and
// against a limit before they are sliced, and no trailing bytes.
package wire
