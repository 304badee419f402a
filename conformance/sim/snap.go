package sim

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// Snapshots and compaction in the simulator: each node's snapshot files
// live on its own disk beside the WAL (a crash takes both), its jobs run
// step by step at virtual times (a crash may fall between the snapshot's
// fdatasync and its rename, between its rename and the compaction, and
// inside any of them), and its state machine (the KV store) writes and
// restores a snapshot of what it applied.

// snapDir is where each node's snapshots live on its own disk.
const snapDir = "/snap"

// SnapshotDefaults are the snapshot options of seed: small thresholds and
// chunks, so that snapshots, compactions, transfers and installs happen
// all the time; one seed in three runs without snapshots.
func SnapshotDefaults(seed uint64) *replica.SnapshotOptions {
	if seed%3 == 0 {
		return nil
	}
	return &replica.SnapshotOptions{Entries: 20 + 40*(seed%5), KeepEntries: 5 * (seed % 4), ChunkBytes: 128 << (seed % 3),
		WindowChunks: 1 + int(seed%4), ResendTicks: 3, AbortResends: 6}
}

// snapshotOptions are a node's snapshot options (nil: off).
func (n *Node) snapshotOptions() *replica.SnapshotOptions {
	if n.s.opts.Snapshots == nil {
		return nil
	}
	o := *n.s.opts.Snapshots
	o.FS, o.Dir = n.disk, snapDir
	return &o
}

// scheduleJobs takes the jobs the replica handed out and runs their steps
// one at a time, each after a virtual latency.
func (n *Node) scheduleJobs() {
	if n.r == nil {
		return
	}
	for j := n.r.TakeJob(); j != nil; j = n.r.TakeJob() {
		n.scheduleJobStep(j)
	}
}

func (n *Node) scheduleJobStep(j *replica.Job) {
	ep := n.epoch
	n.s.at(n.s.randDur(200*time.Microsecond, 5*time.Millisecond), func() {
		if n.epoch != ep || n.r == nil {
			return // the process that owned the job is gone
		}
		done, err := j.Step()
		if errors.Is(err, vfs.ErrCrashed) || n.disk.Down() {
			n.s.Counts.IOCrashes++
			n.crashed("crash at an I/O point (snapshot " + j.String() + ")")
			return
		}
		if !done {
			n.scheduleJobStep(j)
			return
		}
		n.handle(replica.Event{Kind: replica.EventJob, Job: j})
	})
}

// Snapshot implements replica.Snapshotter: a clone of the KV store as of
// the last entry applied, which writes itself while the store goes on.
func (m *machine) Snapshot() (func(io.Writer) error, error) {
	return m.st.Clone().Snapshot, nil
}

// Restore implements replica.Snapshotter: the store becomes the snapshot's
// state (unchanged on an error). The applied log the end checks replay
// becomes the run's committed prefix up to index (StateMachineSafety makes
// it every node's), and the restored state must be one some node reached
// there by applying entries (SnapshotState).
func (m *machine) Restore(rd io.Reader, index, term uint64) error {
	if err := m.st.RestoreAt(rd, index, term); err != nil {
		return err
	}
	m.log = m.n.s.check.appliedPrefix(m.n, index)
	m.n.s.check.restored(m.n, index, m.st.Hash())
	return nil
}

// stateAt records the state hash a node reached at index: every node
// must reach the same one (StateMachineSafety on the whole state).
func (c *checker) stateAt(n *Node, index, hash uint64) {
	if c.states == nil {
		c.states = map[uint64]uint64{}
	}
	if h, ok := c.states[index]; ok && h != hash {
		c.violation("StateMachineSafety: n%d's state at %d hashes to %016x, another node's to %016x", n.ID, index, hash, h)
	}
	c.states[index] = hash
}

// restored: SnapshotState: the state a node restores from a snapshot is
// the state some node reached at its index by applying entries.
func (c *checker) restored(n *Node, index, hash uint64) {
	c.s.Counts.Restores++
	if h, ok := c.states[index]; ok && h != hash {
		c.violation("SnapshotState: n%d restored a state at %d hashing to %016x; applying the log gives %016x", n.ID, index, hash, h)
	}
	if _, ok := c.states[index]; !ok {
		c.violation("SnapshotState: n%d restored a state at %d that no node reached", n.ID, index)
	}
}

// snapshotFiles lists a node's snapshot files that a flip may hit (the
// ones it reads at boot or sends).
func (n *Node) snapshotFiles() []string {
	names, err := n.disk.List(snapDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range names {
		if strings.HasPrefix(name, "snap-") || strings.HasPrefix(name, "recv-") {
			out = append(out, path.Join(snapDir, name))
		}
	}
	slices.Sort(out)
	return out
}

// flipSnapshot flips one bit at rest in one of n's snapshot files, or
// reports false when it has none.
func (s *Sim) flipSnapshot(n *Node) bool {
	files := n.snapshotFiles()
	if len(files) == 0 {
		return false
	}
	name := files[s.rng.IntN(len(files))]
	img, err := n.disk.ReadFile(name)
	if err != nil || len(img) == 0 {
		return false
	}
	bit := s.rng.Uint64N(uint64(len(img)) * 8)
	if err := n.disk.FlipBit(name, int64(bit/8), uint(bit%8)); err != nil {
		return false
	}
	s.Counts.SnapshotFlips++
	s.logf("n%d: bit flip at rest in %s at byte %d", n.ID, name, bit/8)
	return true
}

// noteSnapshots adds a replica's snapshot counters to the run's.
func (s *Sim) noteSnapshots(st replica.SnapshotStats) {
	c := &s.Counts
	c.SnapshotsMade += int(st.Made)
	c.Installs += int(st.Installed)
	c.Compactions += int(st.Compactions)
	c.ChunksSent += int(st.ChunksSent)
	c.TransferRestarts += int(st.TransferRestarts + st.TransfersFailed)
	c.SnapshotRefused += int(st.VerifyFailed + st.Quarantined)
}

// snapshotIndex is a node's newest snapshot's index (0 without one).
func (n *Node) snapshotIndex() uint64 {
	if n.r == nil {
		return 0
	}
	return n.r.Status().Snapshot.Index
}

// flipChunk flips a bit of a snapshot chunk's data in transit (after the
// transport's checksum): the receiver must refuse it.
func (nw *network) flipChunk(m replica.Message) replica.Message {
	s := nw.s
	c := *m.Chunk
	if len(c.Data) == 0 {
		return m
	}
	s.Counts.WireFlips++
	bit := s.rng.IntN(len(c.Data) * 8)
	c.Data = bytes.Clone(c.Data)
	c.Data[bit/8] ^= 1 << (bit % 8)
	m.Chunk = &c
	return m
}

// replicaLogger is the replica's logger: discarded, unless the run logs
// (Options.Log) with ReplicaLogs set.
func (n *Node) replicaLogger() *slog.Logger {
	if n.s.opts.Log == nil || !n.s.opts.ReplicaLogs {
		return discard
	}
	return slog.New(slog.NewTextHandler(logWriter{n.s}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type logWriter struct{ s *Sim }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Status is the node's replica status (zero when down). For tests.
func (n *Node) Status() replica.Status {
	if n.r == nil {
		return replica.Status{}
	}
	return n.r.Status()
}

// FirstIndex is the node's WAL's first index (0 when down). For tests.
func (n *Node) FirstIndex() uint64 {
	if n.w == nil {
		return 0
	}
	return n.w.FirstIndex()
}
