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
	// reopen: CLEAN last index 2 hard state {1 2 0 0 false}
}

// A stepped WAL, as a simulator or a non-blocking runtime drives it: submit, keep the
// ticket, perform the steps (a simulator may delay StepSync, interleave submissions,
// or crash the disk between and inside them), and act once Progress covers the ticket.
func Example_stepped() {
	disk := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := wal.Options{
		SegmentBytes: 1 << 20,
		Stepped:      true,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	w, _, err := wal.Open(disk, "/data/wal", opts)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	if _, err := w.SubmitHardState(wal.HardState{Term: 1, Vote: 2}); err != nil {
		panic(err)
	}
	if err := w.Append([]wal.Entry{{Index: 1, Term: 1, Data: []byte("x=1")}}); err != nil {
		panic(err)
	}
	ticket := w.SubmitSync()
	for w.Progress().Synced < ticket {
		fmt.Println("step:", w.NextStep())
		if err := w.Step(); err != nil {
			panic(err) // the WAL failed: reopen it
		}
	}
	p := w.Progress()
	fmt.Printf("durable through %d at term %d, hard state %+v\n", p.DurableIndex, p.DurableTerm, p.HardState)
	// Output:
	// step: write
	// step: sync
	// step: write
	// step: sync
	// step: publish
	// durable through 1 at term 1, hard state {Term:1 Vote:2 Commit:0 TruncatedAtTerm:0 Ambiguous:false}
}

// Verified shipping: a leader's stored record bytes go to a follower as they are;
// the follower checks them against its own log before it takes them.
func Example_shipping() {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(seed uint64) *wal.WAL {
		w, _, err := wal.Open(vfs.NewMemFS(vfs.MemConfig{Seed: seed}), "/data/wal", wal.Options{SegmentBytes: 1 << 20, Logger: quiet})
		if err != nil {
			panic(err)
		}
		return w
	}
	leader, follower := open(1), open(2)
	defer leader.Close()
	defer follower.Close()
	_ = leader.Append([]wal.Entry{{Index: 1, Term: 1, Data: []byte("a")}, {Index: 2, Term: 1, Data: []byte("b")}})
	recs, _ := leader.Records(1, 3, 1<<20) // no need to wait for the leader's fdatasync
	fmt.Println("follower takes them:", follower.AppendRecords(recs))
	fmt.Println("again:", follower.AppendRecords(recs[1:]) != nil) // index 2 does not follow 2
	_ = follower.Sync(context.Background())
	a, _ := leader.Checksum(2)
	b, _ := follower.Checksum(2)
	fmt.Println("same chain:", a == b)
	// Output:
	// follower takes them: <nil>
	// again: true
	// same chain: true
}
