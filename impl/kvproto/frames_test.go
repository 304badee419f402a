package kvproto

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/durableraft/durableraft/impl/wire"
)

// readFrames decodes every frame of b and checks its type.
func readFrames(t *testing.T, b []byte, typ uint8) []wire.Frame {
	t.Helper()
	fr := wire.NewReader(bytes.NewReader(b), PayloadBytesMax+1<<10)
	var out []wire.Frame
	for {
		f, err := fr.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("frame %d: %v", len(out), err)
		}
		if f.Type != typ {
			t.Fatalf("frame %d: type %d, want %d", len(out), f.Type, typ)
		}
		out = append(out, f)
	}
}

func TestAppendRequestFrames(t *testing.T) {
	small := func(n int) []Request {
		rs := make([]Request, n)
		for k := range rs {
			rs[k] = Request{ID: uint64(k + 1), Op: OpRead, Key: []byte{byte(k)}}
		}
		return rs
	}
	big := make([]Request, 40) // 500,000-byte commands: 33 fit in a frame
	for k := range big {
		big[k] = Request{ID: uint64(k + 1), Op: OpCommand, Command: bytes.Repeat([]byte{'v'}, 500_000)}
	}
	huge := bytes.Repeat([]byte{'h'}, PayloadBytesMax+1)
	cases := []struct {
		name   string
		batch  []Request
		frames []int // requests per frame
		refuse int   // 1 + the frame DecodeRequests refuses (a request over its limits); 0: none
	}{
		{"empty", nil, nil, 0},
		{"one", small(1), []int{1}, 0},
		{"BatchMax per frame", small(BatchMax + 3), []int{BatchMax, 3}, 0},
		{"split at PayloadBytesMax", big, []int{33, 7}, 0},
		{"an oversized request goes alone", []Request{{ID: 1, Op: OpRead, Key: []byte("a")}, {ID: 2, Op: OpCommand, Command: huge}, {ID: 3, Op: OpRead, Key: []byte("b")}}, []int{1, 1, 1}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := []byte("kept")
			out := AppendRequestFrames(append([]byte(nil), prefix...), c.batch)
			if !bytes.HasPrefix(out, prefix) {
				t.Fatal("dst's bytes were not kept")
			}
			frames := readFrames(t, out[len(prefix):], FrameRequests)
			if len(frames) != len(c.frames) {
				t.Fatalf("%d frames, want %d", len(frames), len(c.frames))
			}
			next := 0
			for k, f := range frames {
				if len(f.Payload) > PayloadBytesMax && c.frames[k] != 1 {
					t.Errorf("frame %d: payload of %d bytes with %d requests", k, len(f.Payload), c.frames[k])
				}
				rs, err := DecodeRequests(f.Payload)
				if k+1 == c.refuse {
					if err == nil {
						t.Fatalf("frame %d decoded: want it refused", k)
					}
					next += c.frames[k]
					continue
				}
				if err != nil {
					t.Fatalf("frame %d: %v", k, err)
				}
				if len(rs) != c.frames[k] {
					t.Fatalf("frame %d: %d requests, want %d", k, len(rs), c.frames[k])
				}
				for _, r := range rs {
					want := c.batch[next]
					if r.ID != want.ID || r.Op != want.Op || !bytes.Equal(r.Command, want.Command) || !bytes.Equal(r.Key, want.Key) {
						t.Fatalf("request %d: got id %d, want id %d", next, r.ID, want.ID)
					}
					next++
				}
			}
		})
	}
}

func TestAppendResponseFrames(t *testing.T) {
	batch := make([]Response, BatchMax+1)
	for k := range batch {
		batch[k] = Response{ID: uint64(k + 1), Status: StatusValue, Found: true, Revision: 7, Value: []byte("v")}
	}
	frames := readFrames(t, AppendResponseFrames(nil, batch), FrameResponses)
	if len(frames) != 2 {
		t.Fatalf("%d frames, want 2", len(frames))
	}
	var ids []uint64
	for _, f := range frames {
		rs, err := DecodeResponses(f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			ids = append(ids, r.ID)
		}
	}
	for k, id := range ids {
		if id != uint64(k+1) {
			t.Fatalf("response %d has id %d", k, id)
		}
	}
	if len(ids) != len(batch) {
		t.Fatalf("%d responses, want %d", len(ids), len(batch))
	}
}
