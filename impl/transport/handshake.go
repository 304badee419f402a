package transport

import (
	"fmt"

	"github.com/durableraft/durableraft/impl/wire"
)

// hello is the dialer's first frame: the cluster it belongs to, its id,
// the id it meant to dial, and its client address (for forwarding and
// redirects).
type hello struct {
	ClusterID  uint64
	From, To   uint64
	ClientAddr string
}

// ack is the acceptor's answer when it accepts.
type ack struct {
	ClusterID  uint64
	ID         uint64
	ClientAddr string
}

// refusal is the acceptor's answer when it refuses; it closes the
// connection after it.
type refusal struct {
	Code    uint8
	Message string
}

// Refusal codes.
const (
	refuseCluster  uint8 = 1 // another cluster id
	refuseNotPeer  uint8 = 2 // the dialer's id is not a member (or is the acceptor's own)
	refuseWrongDst uint8 = 3 // the dialer meant another node
	refuseIdentity uint8 = 4 // Authenticate refused: the certificate does not name the node the hello claims
)

const (
	addrBytesMax    = 256
	messageBytesMax = 1024
)

func (h hello) encode() []byte {
	var e wire.Encoder
	e.U64(h.ClusterID)
	e.U64(h.From)
	e.U64(h.To)
	e.String(h.ClientAddr)
	return e.B
}

func decodeHello(b []byte) (hello, error) {
	d := wire.NewDecoder(b)
	h := hello{ClusterID: d.U64("cluster id"), From: d.U64("from"), To: d.U64("to"), ClientAddr: d.String("client address", addrBytesMax)}
	if err := d.End(); err != nil {
		return hello{}, err
	}
	if h.From == 0 || h.To == 0 {
		return hello{}, fmt.Errorf("%w: hello with node id 0", wire.ErrFrame)
	}
	return h, nil
}

func (a ack) encode() []byte {
	var e wire.Encoder
	e.U64(a.ClusterID)
	e.U64(a.ID)
	e.String(a.ClientAddr)
	return e.B
}

func decodeAck(b []byte) (ack, error) {
	d := wire.NewDecoder(b)
	a := ack{ClusterID: d.U64("cluster id"), ID: d.U64("id"), ClientAddr: d.String("client address", addrBytesMax)}
	return a, d.End()
}

func (r refusal) encode() []byte {
	var e wire.Encoder
	e.U8(r.Code)
	e.String(r.Message)
	return e.B
}

func decodeRefusal(b []byte) (refusal, error) {
	d := wire.NewDecoder(b)
	r := refusal{Code: d.U8("code"), Message: d.String("message", messageBytesMax)}
	return r, d.End()
}
