package replica

import (
	"context"
	"sync"
	"time"

	"github.com/durableraft/durableraft/impl/wal"
)

// Runner drives a Replica in production: one goroutine (Run) owns the
// replica and feeds Handle from an inbox (transport deliveries, client
// requests), a ticker, and the WAL's progress notifications. It adds no
// protocol logic: every decision is Handle's, exactly as in stepped mode.
type Runner struct {
	r        *Replica
	inbox    chan Event
	statusCh chan chan Status
	tick     time.Duration
	stopped  chan struct{}
	// jobsDone returns the replica's jobs (snapshots written or verified)
	// from their goroutines; jobsOut counts those out.
	jobsDone chan *Job
	jobsOut  sync.WaitGroup
}

// RunOptions configure a Runner.
type RunOptions struct {
	// TickInterval is the wall time of one protocol tick. Default 10ms.
	TickInterval time.Duration
	// InboxMax bounds the events waiting for the replica; beyond it a
	// delivery is dropped (counted) and a client request refused with
	// ErrBusy. Default 4096.
	InboxMax int
}

// batchMax bounds the events taken from the inbox at once (proposals and
// reads among them are merged into one batch each).
const batchMax = 512

// NewRunner returns a Runner for r; call Run to start it.
func NewRunner(r *Replica, o RunOptions) *Runner {
	if o.TickInterval <= 0 {
		o.TickInterval = 10 * time.Millisecond
	}
	if o.InboxMax <= 0 {
		o.InboxMax = 4096
	}
	return &Runner{r: r, inbox: make(chan Event, o.InboxMax), statusCh: make(chan chan Status),
		tick: o.TickInterval, stopped: make(chan struct{}), jobsDone: make(chan *Job, 4)}
}

// handle is Handle, then the jobs it handed out start, each on a goroutine
// of its own: a snapshot's I/O never holds up the replica.
func (rn *Runner) handle(ev Event) {
	rn.r.Handle(ev)
	for j := rn.r.TakeJob(); j != nil; j = rn.r.TakeJob() {
		rn.jobsOut.Add(1)
		go func() {
			defer rn.jobsOut.Done()
			_ = j.Run()
			rn.jobsDone <- j
		}()
	}
}

// Run owns the replica until ctx ends. It never blocks on the disk: the
// WAL's own goroutines do the I/O and notify.
func (rn *Runner) Run(ctx context.Context) {
	defer close(rn.stopped)
	defer rn.waitJobs()
	t := time.NewTicker(rn.tick)
	defer t.Stop()
	w := rn.r.w
	var last wal.Progress
	batch := make([]Event, 0, batchMax)
	for {
		notify := w.Notify()
		if p := w.Progress(); !sameProgress(p, last) {
			last = p
			rn.handle(Event{Kind: EventWAL, Progress: p})
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-notify:
		case <-t.C:
			rn.handle(Event{Kind: EventTick})
		case reply := <-rn.statusCh:
			reply <- rn.r.Status()
		case j := <-rn.jobsDone:
			rn.handle(Event{Kind: EventJob, Job: j})
		case ev := <-rn.inbox:
			batch = rn.drain(append(batch[:0], ev))
			for _, ev := range batch {
				rn.handle(ev)
			}
			clear(batch)
		}
	}
}

// waitJobs waits for the jobs still out when Run stops (their results are
// dropped: a snapshot half made is a tmp file the next boot removes).
func (rn *Runner) waitJobs() {
	done := make(chan struct{})
	go func() { rn.jobsOut.Wait(); close(done) }()
	for {
		select {
		case <-rn.jobsDone:
		case <-done:
			return
		}
	}
}

// drain takes what else waits in the inbox, merging proposals into one
// batch and reads into another (batching at the proposal hop; one
// confirmation round for every read waiting).
func (rn *Runner) drain(batch []Event) []Event {
	for len(batch) < batchMax {
		select {
		case ev := <-rn.inbox:
			batch = append(batch, ev)
			continue
		default:
		}
		break
	}
	var props, reads *Event
	out := batch[:0]
	for _, ev := range batch {
		switch {
		case ev.Kind == EventPropose && props != nil:
			props.Proposals = append(props.Proposals, ev.Proposals...)
		case ev.Kind == EventRead && reads != nil:
			reads.Reads = append(reads.Reads, ev.Reads...)
		default:
			out = append(out, ev)
			switch ev.Kind {
			case EventPropose:
				props = &out[len(out)-1]
			case EventRead:
				reads = &out[len(out)-1]
			}
		}
	}
	return out
}

func sameProgress(a, b wal.Progress) bool {
	return a.DurableIndex == b.DurableIndex && a.DurableTerm == b.DurableTerm && a.Synced == b.Synced &&
		a.HardState == b.HardState && (a.Err == nil) == (b.Err == nil)
}

// Deliver hands the replica a message from the network. It never blocks:
// when the inbox is full the message is dropped (and counted), as a
// network may.
func (rn *Runner) Deliver(m Message) {
	select {
	case rn.inbox <- Event{Kind: EventMessage, Msg: m}:
	default:
		rn.r.stats.MessagesDropped.Add(1)
	}
}

// Submit hands the replica an input from another goroutine: proposals,
// reads, a transfer, a campaign. ErrBusy when the inbox is full; the
// Done callbacks of a refused event are not called.
func (rn *Runner) Submit(ev Event) error {
	select {
	case <-rn.stopped:
		return ErrClosed
	default:
	}
	select {
	case rn.inbox <- ev:
		return nil
	default:
		return ErrBusy
	}
}

// Propose proposes data and waits for its result, ctx's end, or the
// runner's stop. A context error means the outcome is unknown.
func (rn *Runner) Propose(ctx context.Context, data []byte) (Result, error) {
	ch := make(chan Result, 1)
	if err := rn.Submit(Event{Kind: EventPropose, Proposals: []Proposal{{Data: data, Done: func(r Result) { ch <- r }}}}); err != nil {
		return Result{}, err
	}
	select {
	case res := <-ch:
		return res, res.Err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-rn.stopped:
		return Result{}, ErrClosed
	}
}

// Status asks the replica's goroutine for its status.
func (rn *Runner) Status(ctx context.Context) (Status, error) {
	reply := make(chan Status, 1)
	select {
	case rn.statusCh <- reply:
	case <-ctx.Done():
		return Status{}, ctx.Err()
	case <-rn.stopped:
		return Status{}, ErrClosed
	}
	select {
	case st := <-reply:
		return st, nil
	case <-ctx.Done():
		return Status{}, ctx.Err()
	}
}
