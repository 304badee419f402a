package transport

import "sync/atomic"

// Stats are the transport's counters since it started. Safe to read from
// any goroutine.
type Stats struct {
	// Outbound connections.
	Dials, DialFailures, HandshakesRefusedByPeer, Reconnects atomic.Uint64
	// Inbound connections.
	Accepted, HandshakesRefused, ConnectionsReplaced atomic.Uint64
	// TLSHandshakesFailed: inbound TLS handshakes that failed (a
	// certificate of another CA, none, not TLS at all). IdentityRefused:
	// Authenticate refused the other side, either way (inbound ones are in
	// HandshakesRefused too).
	TLSHandshakesFailed, IdentityRefused atomic.Uint64
	// Traffic.
	FramesSent, FramesReceived, BytesSent, BytesReceived atomic.Uint64
	MessagesSent, MessagesReceived, Writes               atomic.Uint64
	// Drops: a full queue, a failed write (what it carried and what was
	// queued), a message for a node not in the cluster, one that could not
	// be encoded.
	DroppedQueueFull, DroppedWriteFailed, DroppedUnknownPeer, DroppedUnencodable atomic.Uint64
	// Bad input: frames that do not verify (closed), messages that do not
	// decode or claim another sender or recipient (closed).
	BadFrames, BadMessages atomic.Uint64
}

// StatsSnapshot is Stats read once, for JSON.
type StatsSnapshot struct {
	Dials                   uint64 `json:"dials"`
	DialFailures            uint64 `json:"dial_failures"`
	HandshakesRefusedByPeer uint64 `json:"handshakes_refused_by_peer"`
	Reconnects              uint64 `json:"reconnects"`
	Accepted                uint64 `json:"accepted"`
	HandshakesRefused       uint64 `json:"handshakes_refused"`
	ConnectionsReplaced     uint64 `json:"connections_replaced"`
	TLSHandshakesFailed     uint64 `json:"tls_handshakes_failed"`
	IdentityRefused         uint64 `json:"identity_refused"`
	FramesSent              uint64 `json:"frames_sent"`
	FramesReceived          uint64 `json:"frames_received"`
	BytesSent               uint64 `json:"bytes_sent"`
	BytesReceived           uint64 `json:"bytes_received"`
	MessagesSent            uint64 `json:"messages_sent"`
	MessagesReceived        uint64 `json:"messages_received"`
	Writes                  uint64 `json:"writes"`
	DroppedQueueFull        uint64 `json:"dropped_queue_full"`
	DroppedWriteFailed      uint64 `json:"dropped_write_failed"`
	DroppedUnknownPeer      uint64 `json:"dropped_unknown_peer"`
	DroppedUnencodable      uint64 `json:"dropped_unencodable"`
	BadFrames               uint64 `json:"bad_frames"`
	BadMessages             uint64 `json:"bad_messages"`
}

// Snapshot reads every counter.
func (s *Stats) Snapshot() StatsSnapshot {
	return StatsSnapshot{
		Dials: s.Dials.Load(), DialFailures: s.DialFailures.Load(), HandshakesRefusedByPeer: s.HandshakesRefusedByPeer.Load(),
		Reconnects: s.Reconnects.Load(), Accepted: s.Accepted.Load(), HandshakesRefused: s.HandshakesRefused.Load(),
		ConnectionsReplaced: s.ConnectionsReplaced.Load(), TLSHandshakesFailed: s.TLSHandshakesFailed.Load(),
		IdentityRefused: s.IdentityRefused.Load(), FramesSent: s.FramesSent.Load(), FramesReceived: s.FramesReceived.Load(),
		BytesSent: s.BytesSent.Load(), BytesReceived: s.BytesReceived.Load(), MessagesSent: s.MessagesSent.Load(),
		MessagesReceived: s.MessagesReceived.Load(), Writes: s.Writes.Load(), DroppedQueueFull: s.DroppedQueueFull.Load(),
		DroppedWriteFailed: s.DroppedWriteFailed.Load(), DroppedUnknownPeer: s.DroppedUnknownPeer.Load(),
		DroppedUnencodable: s.DroppedUnencodable.Load(), BadFrames: s.BadFrames.Load(), BadMessages: s.BadMessages.Load(),
	}
}
