package client

import (
	"context"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kvproto"
)

// Put sets key to value and returns the key's new revision.
func (c *Client) Put(ctx context.Context, key, value []byte) (uint64, error) {
	r, err := c.write(ctx, kv.Put(key, value))
	return r.Revision, err
}

// CAS sets key to value if its revision is revision (0: if it is absent);
// a failed comparison is a *MismatchError (errors.Is ErrMismatch).
func (c *Client) CAS(ctx context.Context, key []byte, revision uint64, value []byte) (uint64, error) {
	r, err := c.write(ctx, kv.CASRevision(key, revision, value))
	return r.Revision, err
}

// Delete removes key and reports whether it was there.
func (c *Client) Delete(ctx context.Context, key []byte) (bool, error) {
	r, err := c.write(ctx, kv.Delete(key))
	return err == nil && r.Code == kv.CodeOK, err
}

// DeleteIf removes key if its revision is revision.
func (c *Client) DeleteIf(ctx context.Context, key []byte, revision uint64) error {
	_, err := c.write(ctx, kv.DeleteIfRevision(key, revision))
	return err
}

// Do runs any write command (its session fields are the client's).
func (c *Client) Do(ctx context.Context, cmd kv.Command) (kv.Result, error) { return c.write(ctx, cmd) }

// Get reads key linearizably: the answer reflects every write
// acknowledged before the call.
func (c *Client) Get(ctx context.Context, key []byte) (value []byte, revision uint64, found bool, err error) {
	return c.get(ctx, key, kvproto.OpRead)
}

// GetStale reads key from whichever member the client is connected to,
// however far behind it is.
func (c *Client) GetStale(ctx context.Context, key []byte) (value []byte, revision uint64, found bool, err error) {
	return c.get(ctx, key, kvproto.OpStaleRead)
}

func (c *Client) get(ctx context.Context, key []byte, op kvproto.Op) ([]byte, uint64, bool, error) {
	resp, _, err := c.roundTrip(ctx, func() kvproto.Request { return kvproto.Request{Op: op, Key: key} }, true)
	if err != nil {
		return nil, 0, false, err
	}
	if resp.Status != kvproto.StatusValue {
		return nil, 0, false, &Error{Code: "internal", Message: "a read answered with " + resp.String()}
	}
	return append([]byte(nil), resp.Value...), resp.Revision, resp.Found, nil
}
