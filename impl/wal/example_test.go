package wal_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// A server loop's use of the WAL: persist the hard state, append, wait for the durable
// index, and only then send what had to wait. Recovery reports a verdict.
func Example() {
	disk := vfs.NewMemFS(vfs.MemConfig{Seed: 1}) // vfs.OS{} for the real disk
	opts := wal.Options{
		SegmentBytes: 1 << 20, // MemFS holds whole files in memory: keep them small
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	w, rec, err := wal.Open(disk, "/data/wal", opts)
	if err != nil {
		panic(err)
	}
	fmt.Println("first boot:", rec.Verdict, rec.Case)

	if err := w.SetHardState(wal.HardState{Term: 1, Vote: 2}); err != nil {
		panic(err)
	}
	if err := w.Append([]wal.Entry{{Index: 1, Term: 1, Data: []byte("x=1")}, {Index: 2, Term: 1, Data: []byte("y=2")}}); err != nil {
		panic(err)
	}
	if err := w.WaitDurable(context.Background(), 2); err != nil {
		panic(err) // never acknowledge: the WAL failed, truncated the entry, or closed
	}
	fmt.Println("durable through", w.DurableIndex())

	ents, _ := w.Entries(1, 3, 1<<20)
	for _, e := range ents {
		fmt.Printf("%d/%d %s\n", e.Index, e.Term, e.Data)
	}
	_ = w.Close()

	w, rec, _ = wal.Open(disk, "/data/wal", opts)
	defer w.Close()
	fmt.Println("reopen:", rec.Verdict, "last index", rec.IndexLast, "hard state", rec.HardState)
	// Output:
	// first boot: CLEAN R1
	// durable through 2
	// 1/1 x=1
	// 2/1 y=2
	// reopen: CLEAN last index 2 hard state {1 2 0 0}
}
