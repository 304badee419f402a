package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// Snapshotter is the state machine's side of snapshots, beside Apply. A
// replica with Config.Snapshots needs a StateMachine that implements it.
type Snapshotter interface {
	// Snapshot captures the state as of the last entry applied and returns
	// a function that writes it to w as a stream. It is called on the
	// replica's goroutine; write may run on another goroutine while Apply
	// goes on, so it must write the state captured, not the live one. The
	// stream must be deterministic for the state.
	Snapshot() (write func(w io.Writer) error, err error)
	// Restore replaces the state with the one r streams: a state written
	// by Snapshot whose last entry is (index, term). It must read r to its
	// end (io.EOF): the stream is verified as it is read, and an error may
	// come at the very end. On any error the state must be unchanged.
	Restore(r io.Reader, index, term uint64) error
}

// SnapshotOptions turn snapshots and compaction on (Config.Snapshots).
type SnapshotOptions struct {
	// FS and Dir hold the snapshot files (the WAL's file system: a crash
	// takes both at once).
	FS  vfs.FS
	Dir string
	// Entries and Bytes are the policy: a snapshot once this many entries,
	// or bytes of entry data, were applied since the last one (0 turns a
	// threshold off; both 0: never). KeepEntries entries below a snapshot
	// stay in the log (default Entries/4), so that a follower a little
	// behind catches up from the log, not by a snapshot.
	Entries, Bytes, KeepEntries uint64
	// ChunkBytes is the block size of a snapshot file and the size of a
	// transfer chunk (default 64 KiB); WindowChunks the chunks in flight to
	// one follower (default 4): what a transfer holds in memory on either
	// side.
	ChunkBytes, WindowChunks int
	// ResendTicks: with no acknowledgment for this long a sender resends
	// from the follower's last acknowledged offset (default 5); after
	// AbortResends resends without progress it gives up and reports the
	// transfer failed (default 8).
	ResendTicks, AbortResends int
	// SizeMax bounds a snapshot accepted from a leader (default 1 TiB).
	SizeMax uint64
}

func (o *SnapshotOptions) withDefaults() {
	if o.ChunkBytes == 0 {
		o.ChunkBytes = 64 << 10
	}
	if o.WindowChunks == 0 {
		o.WindowChunks = 4
	}
	if o.ResendTicks == 0 {
		o.ResendTicks = 5
	}
	if o.AbortResends == 0 {
		o.AbortResends = 8
	}
	if o.SizeMax == 0 {
		o.SizeMax = 1 << 40
	}
	if o.KeepEntries == 0 {
		o.KeepEntries = o.Entries / 4
	}
}

// ErrInstalled answers a proposal whose index a snapshot covered before
// its entry was applied here: its outcome is unknown (not Definite).
var ErrInstalled = errors.New("replica: a snapshot replaced the entry before it was applied here; outcome unknown")

// SnapshotStats count what snapshots did since boot.
type SnapshotStats struct {
	Made, MakeFailed, Installed, Compactions                                    uint64
	ChunksSent, ChunksReceived, ChunksRefused, Resends, TransfersStarted        uint64
	TransfersDone, TransfersFailed, TransferRestarts, VerifyFailed, Quarantined uint64
	BytesSent, BytesReceived                                                    uint64
}

// snapRuntime is a replica's snapshot machinery.
//
// Invariants: cur.Index = 0 exactly when curName = ""; cur is the newest
// snapshot the core was told of (SnapshotMade, or its install, or the
// boot's); making / verifying exactly while a job of that kind is out;
// installName != "" only between a verified snapshot's step and its
// install (or refusal).
type snapRuntime struct {
	opts  SnapshotOptions
	store snapStore
	sm    Snapshotter

	cur     SnapshotMeta
	curName string
	// appliedBytes is the entry data applied since cur.
	appliedBytes uint64
	// jobs wait for the driver (TakeJob).
	jobs      []*Job
	making    bool
	verifying bool
	// needFresh: cur's file failed verification when read; make a new one.
	needFresh bool
	// backoff: ticks before another snapshot is tried after a failure.
	backoff int

	senders map[raft.NodeID]*sender
	recv    *receiver
	// installName is the received file the core is deciding on.
	installName string
	installMeta SnapshotMeta

	stats SnapshotStats
	// bootRow is the boot decision table's row of this boot.
	bootRow string
}

// TakeJob hands the driver the next job, or nil.
func (r *Replica) TakeJob() *Job {
	s := r.snaps
	if s == nil || len(s.jobs) == 0 {
		return nil
	}
	j := s.jobs[0]
	s.jobs = s.jobs[1:]
	return j
}

// SnapshotStats returns the snapshot counters (zero without snapshots).
// Call it on the replica's goroutine.
func (r *Replica) SnapshotStats() SnapshotStats {
	if r.snaps == nil {
		return SnapshotStats{}
	}
	return r.snaps.stats
}

// noteApplied counts an applied entry toward the policy.
func (s *snapRuntime) noteApplied(e *raft.Entry) { s.appliedBytes += uint64(len(e.Data)) }

// maybeSnapshot starts a snapshot when the policy says so, the last one is
// done, and what it would capture is durable in the WAL (a snapshot never
// covers an entry the log could still lose in a crash).
func (r *Replica) maybeSnapshot() {
	s := r.snaps
	if s == nil || s.making || r.failErr != nil || s.backoff > 0 {
		return
	}
	o := &s.opts
	since := r.applied - min(r.applied, s.cur.Index)
	due := s.needFresh || (o.Entries > 0 && since >= o.Entries) || (o.Bytes > 0 && s.appliedBytes >= o.Bytes)
	if !due || r.applied == 0 || (r.applied <= s.cur.Index && !s.needFresh) || r.progress.DurableIndex < r.applied {
		return
	}
	if err := r.startSnapshot(); err != nil {
		s.stats.MakeFailed++
		s.backoff = 10
		r.alert.log(r.log, "snapshot", "replica: cannot start a snapshot", "applied", r.applied, "err", err)
	}
}

func (r *Replica) startSnapshot() error {
	s := r.snaps
	term, err := r.w.Term(r.applied)
	if err != nil {
		return err
	}
	chain, err := r.w.Checksum(r.applied)
	if err != nil {
		return err
	}
	write, err := s.sm.Snapshot()
	if err != nil {
		return err
	}
	voters := slices.Sorted(slices.Values(r.cfg.Raft.Voters))
	conf, err := r.node.MembershipAt(r.applied)
	if err != nil {
		return err
	}
	meta := SnapshotMeta{Index: r.applied, Term: term, Chain: chain, Voters: conf.Voters,
		TracePrefix: r.node.TracePrefix(r.applied), BlockBytes: s.opts.ChunkBytes}
	if len(conf.Learners) > 0 || len(conf.Removed) > 0 || !slices.Equal(conf.Voters, voters) {
		meta.Membership = &conf
	}
	header, err := encodeSnapHeader(&meta)
	if err != nil {
		return err
	}
	s.jobs = append(s.jobs, newMakeJob(s.store, meta, header, write))
	s.making, s.needFresh = true, false
	return nil
}

// jobDone takes a job back from the driver.
func (r *Replica) jobDone(j *Job) {
	s := r.snaps
	switch j.kind {
	case jobMake:
		s.making = false
		if err := j.Err(); err != nil {
			s.stats.MakeFailed++
			s.backoff = 10
			r.log.Error("replica: snapshot failed (the log is not compacted; retrying later)", "index", j.meta.Index, "err", err)
			return
		}
		r.snapshotMade(j)
	case jobVerify:
		s.verifying = false
		r.snapshotVerified(j)
	}
}

// snapshotMade: a snapshot of this node's state machine is durable. The
// core learns of it (a leader sends it to followers behind the compaction
// point), the log is compacted below it, older files go.
func (r *Replica) snapshotMade(j *Job) {
	s := r.snaps
	s.stats.Made++
	s.cur, s.curName, s.appliedBytes = j.meta, j.name, 0
	if err := r.node.SnapshotMade(j.meta.info()); err != nil {
		panic(fmt.Sprintf("replica: the core refuses the snapshot it asked for: %v", err))
	}
	r.log.Info("replica: snapshot made", "index", j.meta.Index, "term", j.meta.Term, "bytes", j.size)
	r.compact()
	r.removeOldSnapshots()
}

// compact drops the log below the newest snapshot, keeping KeepEntries,
// and only below what the core says is applied, committed and durable.
func (r *Replica) compact() {
	s := r.snaps
	through := min(s.cur.Index, r.node.CompactLimit())
	if through <= s.opts.KeepEntries {
		return
	}
	through -= s.opts.KeepEntries
	if through <= r.w.FirstIndex()-1 {
		return
	}
	if _, err := r.w.SubmitCompact(through); err != nil {
		r.walError("compact", err)
		return
	}
	if base := r.w.FirstIndex() - 1; base > 0 {
		if err := r.node.Compact(base); err != nil {
			panic(fmt.Sprintf("replica: the core refuses a compaction within its limit: %v", err))
		}
		s.stats.Compactions++
	}
}

// removeOldSnapshots removes every snapshot file but the newest and those
// a transfer still reads.
func (r *Replica) removeOldSnapshots() {
	s := r.snaps
	files, err := s.store.list()
	if err != nil {
		return
	}
	var drop []string
	for _, f := range files {
		if f.name == s.curName || (f.kind != snapKindMade && f.kind != snapKindRecv) || f.name == s.installName {
			continue
		}
		inUse := false
		for _, sd := range s.senders {
			inUse = inUse || sd.name == f.name
		}
		if !inUse {
			drop = append(drop, f.name)
		}
	}
	if err := s.store.remove(drop...); err != nil {
		r.log.Warn("replica: removing old snapshots", "err", err)
	}
}

// installSnapshot carries out Ready.Snapshot: the state machine is
// restored from the received file (verified as it is read), the WAL reset
// after the snapshot with its chain value, and inputs held until the reset
// is durable; the leader learns that it is done only then.
func (r *Replica) installSnapshot(info raft.SnapshotInfo) {
	s := r.snaps
	if s == nil || s.installName == "" || s.installMeta.info() != info {
		panic(fmt.Sprintf("replica: the core installed %+v, which the runtime does not hold", info))
	}
	name, meta := s.installName, s.installMeta
	s.installName = ""
	_, err := s.store.restore(name, func(rd io.Reader, m SnapshotMeta) error { return s.sm.Restore(rd, m.Index, m.Term) })
	if err != nil {
		s.stats.VerifyFailed++
		r.log.Error("replica: the snapshot the core installed cannot be read back: failing", "index", info.Index, "err", err)
		r.walError("snapshot install", err)
		r.stepLost = true
		return
	}
	r.applied = info.Index
	r.stats.Applied.Store(info.Index)
	for _, p := range r.proposals {
		p.done(Result{Index: p.index, Term: p.term, Err: ErrInstalled})
	}
	r.proposals = nil
	if err := r.w.ResetChain(info.Index, info.Term, meta.Chain); err != nil {
		r.walError("reset after a snapshot", err)
		r.stepLost = true
		return
	}
	r.hold(r.w.SubmitSync())
	s.cur, s.curName, s.appliedBytes = meta, name, 0
	s.stats.Installed++
	r.log.Info("replica: snapshot installed", "index", info.Index, "term", info.Term, "from", uint64(s.recvFrom()))
	if done, ok := s.doneMessage(r.id); ok {
		r.stash = append(r.stash, done)
	}
	s.recv = nil
}

// tickSnapshots runs the senders' resend timers and the retry backoff.
func (r *Replica) tickSnapshots() {
	s := r.snaps
	if s == nil {
		return
	}
	if s.backoff > 0 {
		s.backoff--
	}
	for _, to := range slices.Sorted(mapKeys(s.senders)) {
		r.tickSender(s.senders[to])
	}
	if s.recv != nil {
		s.recv.idle++
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// closeSnapshots ends every transfer and closes their files.
func (s *snapRuntime) closeSnapshots() {
	for to, sd := range s.senders {
		sd.close()
		delete(s.senders, to)
	}
	if s.recv != nil {
		s.recv.close()
	}
}

// bootWithSnapshots sets up the snapshot machinery and, before the core
// boots, finds the snapshot to restart from (snapboot.go): boot gets its
// index, its trace prefix, the state machine's applied index, and the
// verdict its row says.
func (r *Replica) bootWithSnapshots(boot *raft.Boot) error {
	o := r.cfg.Snapshots
	if o == nil {
		return nil
	}
	sm, ok := r.sm.(Snapshotter)
	switch {
	case !ok:
		return errors.New("replica: config: Snapshots needs a StateMachine that implements Snapshotter")
	case o.FS == nil || o.Dir == "":
		return errors.New("replica: config: Snapshots needs FS and Dir")
	case r.cfg.Applied != 0:
		return errors.New("replica: config: with Snapshots the replica restores the state machine: Applied must be 0")
	}
	opts := *o
	opts.withDefaults()
	if opts.ChunkBytes < snapBlockBytesMin || opts.ChunkBytes > snapBlockBytesMax || opts.WindowChunks < 1 {
		return fmt.Errorf("replica: config: snapshot chunks of %d bytes, window %d", opts.ChunkBytes, opts.WindowChunks)
	}
	r.snaps = &snapRuntime{opts: opts, store: snapStore{fs: opts.FS, dir: opts.Dir}, sm: sm, senders: map[raft.NodeID]*sender{}}
	b, err := r.bootSnapshots(context.Background())
	if err != nil {
		return err
	}
	r.snaps.bootRow = b.row.row
	boot.Snapshot, boot.TracePrefix, boot.Applied = b.info, b.prefix, b.info.Index
	if b.info.Index > 0 {
		boot.Membership = b.meta.Membership // the configuration at the snapshot restored
	}
	r.applied = b.info.Index
	if b.truncated {
		boot.Verdict = raft.VerdictTruncated
		if !boot.HardStateLost {
			boot.HardState = hardStateFromWAL(r.w.HardState()) // with the mark (markTruncatedBoot)
		}
	}
	return nil
}
