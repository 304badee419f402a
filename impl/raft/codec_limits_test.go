package raft_test

import (
	"errors"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// UnmarshalMessage takes at most maxEntries entries: a frame with one more is
// refused with ErrCodec, before any entry is read; the same frame passes with
// a limit that allows it.
func TestUnmarshalEntriesLimit(t *testing.T) {
	m := raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: 3, PrevLogIndex: 4, PrevLogTerm: 3,
		Entries: []raft.Entry{{Index: 5, Term: 3, Data: []byte("a")}, {Index: 6, Term: 3, Data: []byte("b")}, {Index: 7, Term: 3}}}
	b := raft.MarshalMessage(&m)
	if _, err := raft.UnmarshalMessage(b, 2, 1<<20); !errors.Is(err, raft.ErrCodec) {
		t.Fatalf("3 entries with a limit of 2: %v, want ErrCodec", err)
	}
	got, err := raft.UnmarshalMessage(b, 3, 1<<20)
	if err != nil || len(got.Entries) != 3 {
		t.Fatalf("3 entries with a limit of 3: %d entries, %v", len(got.Entries), err)
	}
}
