package kvproto

import (
	"fmt"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/wire"
)

// Frame types of the client protocol (the peer protocol's are below 16).
const (
	FrameRequests  uint8 = 16
	FrameResponses uint8 = 17
)

// Op is what a request asks.
type Op uint8

const (
	// OpCommand: propose Command (a kv.Command's encoding).
	OpCommand Op = iota + 1
	// OpRead: a linearizable read of Key.
	OpRead
	// OpStaleRead: a read of Key from this server's state, however old.
	OpStaleRead
	opEnd
)

// Request is one client request.
type Request struct {
	ID      uint64
	Op      Op
	Command []byte // OpCommand
	Key     []byte // OpRead, OpStaleRead
}

// Status says what a response is.
type Status uint8

const (
	// StatusResult: Result is the kv.Result's encoding of a command.
	StatusResult Status = iota + 1
	// StatusValue: a read's answer: Found, Revision, Value.
	StatusValue
	// StatusError: Code, Message, Definite, Leader, LeaderAddr.
	StatusError
	statusEnd
)

// Response answers the request with the same ID.
type Response struct {
	ID     uint64
	Status Status
	Result []byte // StatusResult

	Found    bool // StatusValue
	Revision uint64
	Value    []byte

	Code       string // StatusError
	Message    string
	Definite   bool
	Leader     uint64
	LeaderAddr string
}

// Limits of the protocol.
const (
	BatchMax        = 1 << 16
	codeBytesMax    = 64
	messageBytesMax = 1024
	addrBytesMax    = 256
	// PayloadBytesMax bounds one frame's payload; a client splits larger
	// batches.
	PayloadBytesMax = 16 << 20
)

// AppendRequest appends r to e.
func AppendRequest(e *wire.Encoder, r *Request) {
	e.U64(r.ID)
	e.U8(uint8(r.Op))
	if r.Op == OpCommand {
		e.Bytes(r.Command)
	} else {
		e.Bytes(r.Key)
	}
}

// RequestSize bounds the encoding of r.
func RequestSize(r *Request) int { return 8 + 1 + 4 + len(r.Command) + len(r.Key) }

// EncodeRequests encodes a batch payload.
func EncodeRequests(dst []byte, rs []Request) []byte {
	e := wire.Encoder{B: dst}
	e.U32(uint32(len(rs)))
	for k := range rs {
		AppendRequest(&e, &rs[k])
	}
	return e.B
}

// DecodeRequests decodes a batch payload strictly. Command and Key alias
// the payload.
func DecodeRequests(b []byte) ([]Request, error) {
	d := wire.NewDecoder(b)
	n := d.Count("request count", 8+1+4, BatchMax)
	out := make([]Request, 0, n)
	for k := 0; k < n && d.Err() == nil; k++ {
		r := Request{ID: d.U64("id"), Op: Op(d.U8("op"))}
		switch r.Op {
		case OpCommand:
			r.Command = d.Bytes("command", kv.CommandBytesMax)
		case OpRead, OpStaleRead:
			r.Key = d.Bytes("key", kv.KeyBytesMax)
		default:
			d.Fail("request %d: op %d", r.ID, r.Op)
		}
		out = append(out, r)
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	return out, nil
}

// AppendResponse appends r to e.
func AppendResponse(e *wire.Encoder, r *Response) {
	e.U64(r.ID)
	e.U8(uint8(r.Status))
	switch r.Status {
	case StatusResult:
		e.Bytes(r.Result)
	case StatusValue:
		e.U8(b2u(r.Found))
		e.U64(r.Revision)
		e.Bytes(r.Value)
	case StatusError:
		e.String(r.Code)
		e.String(r.Message)
		e.U8(b2u(r.Definite))
		e.U64(r.Leader)
		e.String(r.LeaderAddr)
	}
}

// ResponseSize bounds the encoding of r.
func ResponseSize(r *Response) int {
	return 8 + 1 + 4 + len(r.Result) + 1 + 8 + 4 + len(r.Value) + 4 + len(r.Code) + 4 + len(r.Message) + 1 + 8 + 4 + len(r.LeaderAddr)
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// EncodeResponses encodes a batch payload.
func EncodeResponses(dst []byte, rs []Response) []byte {
	e := wire.Encoder{B: dst}
	e.U32(uint32(len(rs)))
	for k := range rs {
		AppendResponse(&e, &rs[k])
	}
	return e.B
}

// DecodeResponses decodes a batch payload strictly. Result and Value
// alias the payload.
func DecodeResponses(b []byte) ([]Response, error) {
	d := wire.NewDecoder(b)
	n := d.Count("response count", 8+1+4, BatchMax)
	out := make([]Response, 0, n)
	boolean := func(what string) bool {
		v := d.U8(what)
		if v > 1 {
			d.Fail("%s: %d is not a boolean", what, v)
		}
		return v == 1
	}
	for k := 0; k < n && d.Err() == nil; k++ {
		r := Response{ID: d.U64("id"), Status: Status(d.U8("status"))}
		switch r.Status {
		case StatusResult:
			r.Result = d.Bytes("result", 1<<10)
		case StatusValue:
			r.Found = boolean("found")
			r.Revision = d.U64("revision")
			r.Value = d.Bytes("value", kv.ValueBytesMax)
			if !r.Found && (r.Revision != 0 || len(r.Value) != 0) {
				d.Fail("response %d: a value for a key not found", r.ID)
			}
		case StatusError:
			r.Code = d.String("code", codeBytesMax)
			r.Message = d.String("message", messageBytesMax)
			r.Definite = boolean("definite")
			r.Leader = d.U64("leader")
			r.LeaderAddr = d.String("leader address", addrBytesMax)
		default:
			d.Fail("response %d: status %d", r.ID, r.Status)
		}
		out = append(out, r)
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	return out, nil
}

// Clip shortens an error message to the protocol's limit.
func Clip(msg string) string {
	if len(msg) > messageBytesMax {
		return msg[:messageBytesMax]
	}
	return msg
}

func (r Response) String() string {
	switch r.Status {
	case StatusError:
		return fmt.Sprintf("#%d error %s (definite=%v leader=%d): %s", r.ID, r.Code, r.Definite, r.Leader, r.Message)
	case StatusValue:
		return fmt.Sprintf("#%d value found=%v rev=%d %d bytes", r.ID, r.Found, r.Revision, len(r.Value))
	}
	return fmt.Sprintf("#%d result %x", r.ID, r.Result)
}
