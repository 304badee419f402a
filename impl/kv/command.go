package kv

import (
	"encoding/binary"
	"fmt"
)

// Op says what a command does.
type Op uint8

// The ops. The numbers are part of the command format (docs/kv.md).
const (
	// OpNoop changes nothing but the clock: a leader proposes one to move
	// the clock forward (and so expire sessions) when nothing else is written.
	OpNoop Op = iota + 1
	// OpPut sets Key to Value.
	OpPut
	// OpDelete removes Key (CodeNotFound if absent).
	OpDelete
	// OpCASValue sets Key to Value if Key is present with value
	// ValueExpected (CAS on value).
	OpCASValue
	// OpCASRevision sets Key to Value if Key's revision is RevisionExpected,
	// 0 meaning "absent" (CAS on revision: a create when 0).
	OpCASRevision
	// OpDeleteIfRevision removes Key if its revision is RevisionExpected
	// (which must be positive).
	OpDeleteIfRevision
	// OpRegister opens a session with timeout TimeoutMs; its id is the index
	// of the entry that registers it.
	OpRegister
	// OpKeepAlive keeps Session alive and, if LowestUnacked is positive,
	// drops its responses below LowestUnacked.
	OpKeepAlive
	// OpClose closes Session and drops its responses.
	OpClose
	opEnd
)

// sessionRule says which session fields an op carries.
type sessionRule uint8

const (
	// sessionNone: Session, Seq and LowestUnacked are 0.
	sessionNone sessionRule = iota + 1
	// sessionRequest: a write, with a session (Session > 0 and
	// 1 <= LowestUnacked <= Seq) or without one (all three 0).
	sessionRequest
	// sessionKeepAlive: Session > 0, Seq = 0, LowestUnacked any (0: no news).
	sessionKeepAlive
	// sessionClose: Session > 0, Seq = 0, LowestUnacked = 0.
	sessionClose
)

// The body fields, in the order the format lays them out.
type bodyField uint8

const (
	fieldKey bodyField = 1 << iota
	fieldRevisionExpected
	fieldValueExpected
	fieldValue
	fieldTimeout
)

// opTable is the command format's decision table: for each op, its name,
// the session fields it carries and its body fields (docs/kv.md, "Commands").
var opTable = [opEnd]struct {
	name    string
	session sessionRule
	body    bodyField
	write   bool // a KV write: goes through the session rules and may be cached
}{
	OpNoop:             {"noop", sessionNone, 0, false},
	OpPut:              {"put", sessionRequest, fieldKey | fieldValue, true},
	OpDelete:           {"delete", sessionRequest, fieldKey, true},
	OpCASValue:         {"cas-value", sessionRequest, fieldKey | fieldValueExpected | fieldValue, true},
	OpCASRevision:      {"cas-revision", sessionRequest, fieldKey | fieldRevisionExpected | fieldValue, true},
	OpDeleteIfRevision: {"delete-if-revision", sessionRequest, fieldKey | fieldRevisionExpected, true},
	OpRegister:         {"register", sessionNone, fieldTimeout, false},
	OpKeepAlive:        {"keep-alive", sessionKeepAlive, 0, false},
	OpClose:            {"close", sessionClose, 0, false},
}

func (o Op) valid() bool { return o >= OpNoop && o < opEnd }

func (o Op) String() string {
	if o.valid() {
		return opTable[o].name
	}
	return fmt.Sprintf("Op(%d)", o)
}

// IsWrite reports whether the op is a KV write (put, delete, a CAS).
func (o Op) IsWrite() bool { return o.valid() && opTable[o].write }

// Command is what a proposer puts in an entry's data (encoded by
// AppendCommand). Which fields an op carries is fixed (Validate refuses any
// other set non-zero):
//
//	op                  session fields                      body
//	noop                none                                -
//	put                 optional request                    Key, Value
//	delete              optional request                    Key
//	cas-value           optional request                    Key, ValueExpected, Value
//	cas-revision        optional request                    Key, RevisionExpected, Value
//	delete-if-revision  optional request                    Key, RevisionExpected (> 0)
//	register            none                                TimeoutMs
//	keep-alive          Session, LowestUnacked (0: no news) -
//	close               Session                             -
//
// A request with a session has Session > 0 and 1 <= LowestUnacked <= Seq;
// without one, Session, Seq and LowestUnacked are 0 (at-least-once).
// Every command may carry TimeMs, stamped by the leader.
type Command struct {
	Op Op
	// TimeMs is the leader's clock when it proposed the entry (Unix
	// milliseconds); the store's clock is the largest TimeMs applied. 0
	// leaves the clock as it is.
	TimeMs uint64
	// Session is the session id (the index of its register entry), Seq the
	// request's sequence number in it, LowestUnacked the lowest sequence
	// number whose answer the client has not received yet.
	Session, Seq, LowestUnacked uint64

	Key, Value       []byte
	ValueExpected    []byte // OpCASValue
	RevisionExpected uint64 // OpCASRevision (0: absent), OpDeleteIfRevision
	TimeoutMs        uint64 // OpRegister: 1..SessionTimeoutMsMax
}

// Constructors. Each returns a command without session and time; chain
// InSession and At to add them.

// Noop returns a no-op (a clock tick when At is added).
func Noop() Command { return Command{Op: OpNoop} }

// Put returns a put of value at key.
func Put(key, value []byte) Command { return Command{Op: OpPut, Key: key, Value: value} }

// Delete returns a delete of key.
func Delete(key []byte) Command { return Command{Op: OpDelete, Key: key} }

// CASValue returns a put of value at key if key is present with value expected.
func CASValue(key, expected, value []byte) Command {
	return Command{Op: OpCASValue, Key: key, ValueExpected: expected, Value: value}
}

// CASRevision returns a put of value at key if key's revision is revision
// (0: if key is absent).
func CASRevision(key []byte, revision uint64, value []byte) Command {
	return Command{Op: OpCASRevision, Key: key, RevisionExpected: revision, Value: value}
}

// DeleteIfRevision returns a delete of key if its revision is revision.
func DeleteIfRevision(key []byte, revision uint64) Command {
	return Command{Op: OpDeleteIfRevision, Key: key, RevisionExpected: revision}
}

// Register returns a session registration with the given timeout.
func Register(timeoutMs uint64) Command { return Command{Op: OpRegister, TimeoutMs: timeoutMs} }

// KeepAlive returns a keep-alive of session, dropping its answers below
// lowestUnacked (0: none).
func KeepAlive(session, lowestUnacked uint64) Command {
	return Command{Op: OpKeepAlive, Session: session, LowestUnacked: lowestUnacked}
}

// Close returns the close of session.
func Close(session uint64) Command { return Command{Op: OpClose, Session: session} }

// InSession returns c as request seq of session, the client's lowest
// unacknowledged sequence number being lowestUnacked.
func (c Command) InSession(session, seq, lowestUnacked uint64) Command {
	c.Session, c.Seq, c.LowestUnacked = session, seq, lowestUnacked
	return c
}

// At returns c stamped with the leader's time.
func (c Command) At(timeMs uint64) Command {
	c.TimeMs = timeMs
	return c
}

func (c Command) String() string {
	s := fmt.Sprintf("%v t=%d", c.Op, c.TimeMs)
	if c.Session != 0 || c.Seq != 0 || c.LowestUnacked != 0 {
		s += fmt.Sprintf(" session=%d seq=%d lu=%d", c.Session, c.Seq, c.LowestUnacked)
	}
	if c.Op.valid() {
		body := opTable[c.Op].body
		if body&fieldKey != 0 {
			s += fmt.Sprintf(" key=%q", c.Key)
		}
		if body&fieldRevisionExpected != 0 {
			s += fmt.Sprintf(" rev=%d", c.RevisionExpected)
		}
		if body&fieldValueExpected != 0 {
			s += fmt.Sprintf(" expect=%q", clip(c.ValueExpected))
		}
		if body&fieldValue != 0 {
			s += fmt.Sprintf(" value=%q", clip(c.Value))
		}
		if body&fieldTimeout != 0 {
			s += fmt.Sprintf(" timeout=%dms", c.TimeoutMs)
		}
	}
	return s
}

func clip(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// Validate checks c against the rules of the command format: the ones the
// decoder enforces, so that a command that validates encodes to bytes the
// decoder accepts, and Store.ApplyCommand answers exactly as Store.Apply of
// those bytes. A key or value over its limit gives ErrTooLarge; any other
// violation ErrBadCommand.
func (c Command) Validate() error {
	if !c.Op.valid() {
		return fmt.Errorf("%w: unknown op %d", ErrBadCommand, c.Op)
	}
	row := opTable[c.Op]
	if c.TimeMs > TimeMsMax {
		return fmt.Errorf("%w: %v: time %d over %d", ErrBadCommand, c.Op, c.TimeMs, TimeMsMax)
	}
	if err := c.validateSession(row.session); err != nil {
		return err
	}
	return c.validateBody(row.body)
}

func (c Command) validateSession(rule sessionRule) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %v: %s (session=%d seq=%d lowest-unacked=%d)", ErrBadCommand, c.Op, why, c.Session, c.Seq, c.LowestUnacked)
	}
	switch rule {
	case sessionNone:
		if c.Session != 0 || c.Seq != 0 || c.LowestUnacked != 0 {
			return bad("carries no session fields")
		}
	case sessionRequest:
		switch {
		case c.Session == 0 && (c.Seq != 0 || c.LowestUnacked != 0):
			return bad("a sequence number without a session")
		case c.Session != 0 && (c.LowestUnacked < 1 || c.LowestUnacked > c.Seq || c.Seq > SeqMax):
			return bad("needs 1 <= lowest-unacked <= seq <= 2^62")
		case c.Session > RevisionMax:
			return bad("session id over 2^62")
		}
	case sessionKeepAlive, sessionClose:
		switch {
		case c.Session == 0 || c.Session > RevisionMax:
			return bad("needs a session id in 1..2^62")
		case c.Seq != 0:
			return bad("carries no sequence number")
		case rule == sessionClose && c.LowestUnacked != 0:
			return bad("carries no lowest-unacked")
		case c.LowestUnacked > SeqMax:
			return bad("lowest-unacked over 2^62")
		}
	}
	return nil
}

func (c Command) validateBody(body bodyField) error {
	has := func(f bodyField) bool { return body&f != 0 }
	switch {
	case !has(fieldKey) && len(c.Key) != 0,
		!has(fieldValue) && len(c.Value) != 0,
		!has(fieldValueExpected) && len(c.ValueExpected) != 0,
		!has(fieldRevisionExpected) && c.RevisionExpected != 0,
		!has(fieldTimeout) && c.TimeoutMs != 0:
		return fmt.Errorf("%w: %v: carries a field its op does not have", ErrBadCommand, c.Op)
	}
	if has(fieldKey) {
		if len(c.Key) == 0 {
			return fmt.Errorf("%w: %v: empty key", ErrBadCommand, c.Op)
		}
		if len(c.Key) > KeyBytesMax {
			return fmt.Errorf("%w: %v: key of %d bytes over %d", ErrTooLarge, c.Op, len(c.Key), KeyBytesMax)
		}
	}
	if len(c.Value) > ValueBytesMax || len(c.ValueExpected) > ValueBytesMax {
		return fmt.Errorf("%w: %v: value of %d bytes over %d", ErrTooLarge, c.Op, max(len(c.Value), len(c.ValueExpected)), ValueBytesMax)
	}
	if c.RevisionExpected > RevisionMax {
		return fmt.Errorf("%w: %v: revision %d over 2^62", ErrBadCommand, c.Op, c.RevisionExpected)
	}
	if c.Op == OpDeleteIfRevision && c.RevisionExpected == 0 {
		return fmt.Errorf("%w: %v: revision 0 (an absent key cannot be deleted)", ErrBadCommand, c.Op)
	}
	if has(fieldTimeout) && (c.TimeoutMs < 1 || c.TimeoutMs > SessionTimeoutMsMax) {
		return fmt.Errorf("%w: %v: timeout %d ms outside 1..%d", ErrBadCommand, c.Op, c.TimeoutMs, SessionTimeoutMsMax)
	}
	return nil
}

// The command format (docs/kv.md): a fixed header, then the op's body
// fields in the order of bodyField. Integers are little endian.
const (
	commandVersion     = 1
	commandHeaderBytes = 1 + 1 + 8 + 8 + 8 + 8 // version, op, time, session, seq, lowest-unacked
)

var le = binary.LittleEndian

// EncodedSize returns the size of c's encoding (c must validate).
func (c Command) EncodedSize() int {
	n := commandHeaderBytes
	body := opTable[c.Op].body
	if body&fieldKey != 0 {
		n += 4 + len(c.Key)
	}
	if body&fieldRevisionExpected != 0 {
		n += 8
	}
	if body&fieldValueExpected != 0 {
		n += 4 + len(c.ValueExpected)
	}
	if body&fieldValue != 0 {
		n += 4 + len(c.Value)
	}
	if body&fieldTimeout != 0 {
		n += 8
	}
	return n
}

// AppendCommand appends the encoding of c to dst. It refuses a command that
// does not validate (the error of Validate).
func AppendCommand(dst []byte, c Command) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, err
	}
	dst = append(dst, commandVersion, byte(c.Op))
	dst = le.AppendUint64(dst, c.TimeMs)
	dst = le.AppendUint64(dst, c.Session)
	dst = le.AppendUint64(dst, c.Seq)
	dst = le.AppendUint64(dst, c.LowestUnacked)
	body := opTable[c.Op].body
	if body&fieldKey != 0 {
		dst = appendBytes(dst, c.Key)
	}
	if body&fieldRevisionExpected != 0 {
		dst = le.AppendUint64(dst, c.RevisionExpected)
	}
	if body&fieldValueExpected != 0 {
		dst = appendBytes(dst, c.ValueExpected)
	}
	if body&fieldValue != 0 {
		dst = appendBytes(dst, c.Value)
	}
	if body&fieldTimeout != 0 {
		dst = le.AppendUint64(dst, c.TimeoutMs)
	}
	return dst, nil
}

func appendBytes(dst, b []byte) []byte {
	dst = le.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// Marshal returns the encoding of c.
func (c Command) Marshal() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return AppendCommand(make([]byte, 0, c.EncodedSize()), c)
}

// DecodeCommand decodes an entry's data strictly: every byte is accounted
// for, every rule of Validate holds, and the bytes it accepts are exactly
// the encoding of the command it returns. Key, Value and ValueExpected
// alias b. Errors wrap ErrBadCommand (ErrTooLarge for sizes).
func DecodeCommand(b []byte) (Command, error) {
	if len(b) > CommandBytesMax {
		return Command{}, fmt.Errorf("%w: command of %d bytes over %d", ErrTooLarge, len(b), CommandBytesMax)
	}
	if len(b) < commandHeaderBytes {
		return Command{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrBadCommand, len(b), commandHeaderBytes)
	}
	if b[0] != commandVersion {
		return Command{}, fmt.Errorf("%w: format version %d, want %d", ErrBadCommand, b[0], commandVersion)
	}
	c := Command{Op: Op(b[1]), TimeMs: le.Uint64(b[2:]), Session: le.Uint64(b[10:]), Seq: le.Uint64(b[18:]), LowestUnacked: le.Uint64(b[26:])}
	if !c.Op.valid() {
		return Command{}, fmt.Errorf("%w: unknown op %d", ErrBadCommand, b[1])
	}
	d := decoder{b: b, off: commandHeaderBytes}
	body := opTable[c.Op].body
	if body&fieldKey != 0 {
		c.Key = d.bytes("key", KeyBytesMax)
	}
	if body&fieldRevisionExpected != 0 {
		c.RevisionExpected = d.uint64("revision")
	}
	if body&fieldValueExpected != 0 {
		c.ValueExpected = d.bytes("expected value", ValueBytesMax)
	}
	if body&fieldValue != 0 {
		c.Value = d.bytes("value", ValueBytesMax)
	}
	if body&fieldTimeout != 0 {
		c.TimeoutMs = d.uint64("timeout")
	}
	if d.err == nil && d.off != len(b) {
		d.err = fmt.Errorf("%w: %v: %d trailing bytes", ErrBadCommand, c.Op, len(b)-d.off)
	}
	if d.err != nil {
		return Command{}, d.err
	}
	if err := c.Validate(); err != nil {
		return Command{}, err
	}
	return c, nil
}

// decoder reads length-checked fields; the first error sticks.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) uint64(what string) uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 8 {
		d.err = fmt.Errorf("%w: truncated in the %s at byte %d", ErrBadCommand, what, d.off)
		return 0
	}
	v := le.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

func (d *decoder) bytes(what string, limit int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b)-d.off < 4 {
		d.err = fmt.Errorf("%w: truncated in the %s length at byte %d", ErrBadCommand, what, d.off)
		return nil
	}
	n := uint64(le.Uint32(d.b[d.off:]))
	d.off += 4
	if n > uint64(limit) {
		d.err = fmt.Errorf("%w: %s of %d bytes over %d", ErrTooLarge, what, n, limit)
		return nil
	}
	if uint64(len(d.b)-d.off) < n {
		d.err = fmt.Errorf("%w: truncated in the %s: %d bytes declared, %d left", ErrBadCommand, what, n, len(d.b)-d.off)
		return nil
	}
	v := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return v
}
