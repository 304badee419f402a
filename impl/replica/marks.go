package replica

import (
	"github.com/durableraft/durableraft/impl/marks"
	"github.com/durableraft/durableraft/impl/raft"
)

// Coverage marks (impl/marks): the runtime's paths worth reaching, and the
// core's (raft.AllMarks), which the pure core reports through
// raft.Config.OnMark and the runtime counts here.
var (
	markProposalLost    = marks.New("replica/proposal-lost", "a proposal lost to a leader change while it was being written (another entry took its index)")
	markWALFailed       = marks.New("replica/wal-failure-reported", "the WAL failed (EIO, a full disk) and the core was told: it acknowledges nothing until a restart")
	markRecordRefused   = marks.New("replica/record-refused", "a shipped record failed verification (damaged in transit) and its AppendEntries was dropped")
	markReadsLeaderLost = marks.New("replica/reads-failed-leader-changed", "reads in a confirmation round failed: the leadership ended")

	coreMarks = func() []*marks.Mark {
		all := raft.AllMarks()
		out := make([]*marks.Mark, int(all[len(all)-1])+1)
		for _, m := range all {
			out[m] = marks.New(m.String(), m.What())
		}
		return out
	}()
)

// hitCoreMark counts a mark the core reports (raft.Config.OnMark).
func hitCoreMark(m raft.Mark) {
	if int(m) < len(coreMarks) && coreMarks[m] != nil {
		coreMarks[m].Hit()
	}
}
