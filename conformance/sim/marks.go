package sim

import (
	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/marks"
)

// kvMarks counts the KV store's coverage marks (kv.AllMarks, reported by
// the pure store through kv.Options.OnMark) with impl/marks, as the replica
// runtime counts the core's.
var kvMarks = func() []*marks.Mark {
	all := kv.AllMarks()
	out := make([]*marks.Mark, int(all[len(all)-1])+1)
	for _, m := range all {
		out[m] = marks.New(m.String(), m.What())
	}
	return out
}()

func hitKVMark(m kv.Mark) {
	if int(m) < len(kvMarks) && kvMarks[m] != nil {
		kvMarks[m].Hit()
	}
}
