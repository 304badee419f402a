package replica

import (
	"fmt"
	"io"
)

// Job is disk work the replica hands its driver (TakeJob): writing a
// snapshot of the state machine, or verifying one received. Its steps do
// I/O and touch nothing of the replica, so a driver runs them where it
// likes: Runner on a goroutine of their own (the replica's goroutine goes
// on: heartbeats and the other followers never wait for a snapshot), a
// simulator one at a time at virtual times of its choosing (a crash may
// fall between any two). After the last step, or a failed one, the driver
// hands the job back: Handle(Event{Kind: EventJob, Job: j}).
//
// The steps are the crash points docs/snapshots.md names: a snapshot is
// written and fdatasync'd (step 1), then renamed into place and its
// directory synced (step 2).
type Job struct {
	kind  jobKind
	store snapStore
	steps []func() error
	next  int
	err   error

	meta  SnapshotMeta
	name  string // the file the job produces
	size  int64
	write func(io.Writer) error // jobMake: the state machine's captured state
	// from is the leader a received snapshot came from (jobVerify).
	from receiverKey
}

type jobKind uint8

const (
	jobMake   jobKind = iota + 1 // write a snapshot of this node's state machine
	jobVerify                    // verify a snapshot received in full and make it durable
)

func (j *Job) String() string {
	k := "make"
	if j.kind == jobVerify {
		k = "verify"
	}
	return fmt.Sprintf("snapshot %s %d/%d (step %d of %d)", k, j.meta.Term, j.meta.Index, j.next, len(j.steps))
}

// Step performs the job's next step. done is true after the last step or
// a failed one (Err says which).
func (j *Job) Step() (done bool, err error) {
	if j.err != nil || j.next >= len(j.steps) {
		return true, j.err
	}
	if err := j.steps[j.next](); err != nil {
		j.err = err
		return true, err
	}
	j.next++
	return j.next == len(j.steps), nil
}

// Run performs every step (Runner's way).
func (j *Job) Run() error {
	for {
		if done, err := j.Step(); done {
			return err
		}
	}
}

// Err is the job's failure, nil once it completed.
func (j *Job) Err() error { return j.err }

// Done reports whether every step ran.
func (j *Job) Done() bool { return j.err == nil && j.next == len(j.steps) }

// newMakeJob writes a snapshot of meta from the state machine's captured
// state: tmp-…, fdatasync; then the rename to snap-… and the directory sync.
func newMakeJob(store snapStore, meta SnapshotMeta, header []byte, write func(io.Writer) error) *Job {
	j := &Job{kind: jobMake, store: store, meta: meta, write: write, name: snapName(snapKindMade, meta.Index, meta.Term)}
	tmp := snapName(snapKindTmp, meta.Index, meta.Term)
	j.steps = []func() error{
		func() error {
			f, err := store.fs.Create(store.path(tmp))
			if err != nil {
				return err
			}
			sw := newSnapWriter(f, header, meta.BlockBytes)
			err = write(sw)
			if err == nil {
				j.size, err = sw.finish()
			}
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				_ = store.fs.Remove(store.path(tmp))
				return fmt.Errorf("writing %s: %w", tmp, err)
			}
			return nil
		},
		func() error { return renameSynced(store, tmp, j.name) },
	}
	return j
}

// newVerifyJob verifies a snapshot received in full (part-…) and makes it
// durable: every part read back and checked, fdatasync; then the rename to
// recv-… and the directory sync.
func newVerifyJob(store snapStore, index, term uint64, from receiverKey) *Job {
	j := &Job{kind: jobVerify, store: store, name: snapName(snapKindRecv, index, term), from: from}
	j.meta.Index, j.meta.Term = index, term
	part := snapName(snapKindPart, index, term)
	j.steps = []func() error{
		func() error {
			f, err := store.fs.Open(store.path(part))
			if err != nil {
				return err
			}
			defer f.Close()
			meta, err := verifySnap(f)
			if err != nil {
				return err
			}
			if meta.Index != index || meta.Term != term {
				return fmt.Errorf("%w: offered as %d/%d, the file says %d/%d", ErrSnapshotCorrupt, term, index, meta.Term, meta.Index)
			}
			j.meta = meta
			if j.size, err = f.Size(); err != nil {
				return err
			}
			return f.Sync()
		},
		func() error { return renameSynced(store, part, j.name) },
	}
	return j
}

func renameSynced(store snapStore, from, to string) error {
	if err := store.fs.Rename(store.path(from), store.path(to)); err != nil {
		return err
	}
	return store.fs.SyncDir(store.dir)
}
