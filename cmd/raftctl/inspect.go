package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// inspect decodes and verifies a stopped node's WAL offline, changing
// nothing on disk: it copies the directory into an in-memory disk and runs
// the WAL's own recovery there (the verdict, its decision-table rows, the
// hard state), then reads every record back and checks the hash chain.
func inspect(dir string, out, errw io.Writer) int {
	walDir := dir
	if st, err := os.Stat(filepath.Join(dir, "wal")); err == nil && st.IsDir() {
		walDir = filepath.Join(dir, "wal")
		if b, err := os.ReadFile(filepath.Join(dir, "cluster.json")); err == nil {
			fmt.Fprintf(out, "cluster file:\n%s", b)
		}
	}
	ents, err := os.ReadDir(walDir)
	if err != nil {
		fmt.Fprintln(errw, "raftctl wal inspect:", err)
		return 1
	}
	if _, err := os.Stat(filepath.Join(walDir, "LOCK")); err == nil {
		l, err := vfs.OS{}.Lock(filepath.Join(walDir, "LOCK"))
		if errors.Is(err, vfs.ErrLocked) {
			fmt.Fprintln(errw, "raftctl wal inspect: the directory is locked: its node is running; stop it first")
			return 1
		}
		if err == nil {
			l.Close()
		}
	}
	mem := vfs.NewMemFS(vfs.MemConfig{})
	if err := mem.MkdirAll("/wal"); err != nil {
		fmt.Fprintln(errw, err)
		return 1
	}
	fmt.Fprintf(out, "files in %s:\n", walDir)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(walDir, e.Name()))
		if err != nil {
			fmt.Fprintln(errw, err)
			return 1
		}
		fmt.Fprintf(out, "  %-28s %10d bytes\n", e.Name(), len(b))
		f, err := mem.Create("/wal/" + e.Name())
		if err == nil {
			_, err = f.WriteAt(b, 0)
		}
		if err == nil {
			err = f.Sync()
		}
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			fmt.Fprintln(errw, err)
			return 1
		}
	}
	if err := mem.SyncDir("/wal"); err != nil {
		fmt.Fprintln(errw, err)
		return 1
	}
	w, rec, err := wal.Open(mem, "/wal", wal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(errw, "raftctl wal inspect: open:", err)
		return 1
	}
	defer w.Close()
	fmt.Fprintf(out, "recovery:\n  verdict      %v (row %s)\n  rows         %v\n  reason       %s\n  stop         %s at %d\n",
		rec.Verdict, rec.Case, rec.Path, rec.Reason, rec.StopSegment, rec.StopOffset)
	if rec.EvidenceOffset >= 0 {
		fmt.Fprintf(out, "  evidence     a valid batch at %d behind the break\n", rec.EvidenceOffset)
	}
	if len(rec.Quarantined) > 0 {
		fmt.Fprintf(out, "  quarantined  %v (a start would rename them corrupt-*)\n", rec.Quarantined)
	}
	fmt.Fprintf(out, "  log          [%d, %d], durable %d, rereads healed %d\n", rec.IndexFirst, rec.IndexLast, rec.DurableIndex, rec.RereadsHealed)
	hs := rec.HardState
	fmt.Fprintf(out, "hard state:\n  verdict      %v: %s\n  term %d, vote %d, learned commit %d, truncated at term %d, lost mark %v\n",
		rec.HardStateVerdict, rec.HardStateReason, hs.Term, hs.Vote, hs.Commit, hs.TruncatedAtTerm, w.HardStateLost())
	return verifyChain(w, out, errw)
}

// verifyChain reads every record and checks that each chains to the one
// before it, counting the kv commands they carry.
func verifyChain(w *wal.WAL, out, errw io.Writer) int {
	lo, hi := w.FirstIndex(), w.LastIndex()
	var prev uint32
	var err error
	if lo > 0 {
		prev, err = w.Checksum(lo - 1)
	}
	if err != nil {
		fmt.Fprintln(errw, "chain value at the start:", err)
		return 1
	}
	ops := map[string]int{}
	var bytes, terms uint64
	lastTerm := uint64(0)
	for i := lo; i <= hi && hi > 0; {
		recs, err := w.Records(i, hi+1, 4<<20)
		if err != nil {
			fmt.Fprintf(out, "chain:\n  BROKEN at %d: %v\n", i, err)
			return 1
		}
		for _, r := range recs {
			e, sum, sumPrev, err := r.Decode(len(r))
			if err != nil || e.Index != i || sumPrev != prev {
				fmt.Fprintf(out, "chain:\n  BROKEN at %d: record %d chains to %08x, want %08x (%v)\n", i, e.Index, sumPrev, prev, err)
				return 1
			}
			if e.Term != lastTerm {
				terms++
				lastTerm = e.Term
			}
			prev, bytes = sum, bytes+uint64(len(r))
			name := "core no-op"
			if len(e.Data) > 0 {
				if c, err := kv.DecodeCommand(e.Data); err == nil {
					name = c.Op.String()
				} else {
					name = "not a kv command"
				}
			}
			ops[name]++
			i++
		}
	}
	fmt.Fprintf(out, "chain:\n  %d records verified (%d bytes, %d terms), last chain value %08x\n  commands:", hi-lo+1, bytes, terms, prev)
	names := make([]string, 0, len(ops))
	for k := range ops {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(out, " %s=%d", k, ops[k])
	}
	fmt.Fprintln(out)
	return 0
}
