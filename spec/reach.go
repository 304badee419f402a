package spec

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// ActionSet is a set of actions, each for every server or for one server
// (the label's i), for searching a sub-model: an exploration or a
// simulation with Options.Without (SimOptions.Without) takes no step in the
// set. Every behaviour of the sub-model is one of the model, so a violation
// it finds is a real one (its trace replays through the full Next); its
// state counts are not TLC's, and a property it does not reach may still be
// reachable. A set that names servers breaks the symmetry between them, so
// Explore refuses it with Symmetry. docs/explorer.md, "The classic bugs",
// uses such sub-models (a server that never times out, a leader that never
// replicates) to reach the deeper bounds the classic bugs need.
type ActionSet struct {
	all    uint64                 // bit a: action a, every server
	server [MaxServers + 1]uint64 // server[i] bit a: action a of server i
}

// Has reports whether the step labelled l is in the set.
func (s *ActionSet) Has(l *Label) bool {
	bit := uint64(1) << l.Action
	return s.all&bit != 0 || (int(l.I) < len(s.server) && s.server[l.I]&bit != 0)
}

// Empty reports whether the set has no action.
func (s *ActionSet) Empty() bool { return *s == ActionSet{} }

// NamesServers reports whether the set names a server.
func (s *ActionSet) NamesServers() bool { return s.server != [MaxServers + 1]uint64{} }

// With returns the set with action a of server i added (i = 0: every
// server).
func (s ActionSet) With(a Action, i ServerID) ActionSet {
	if i == 0 {
		s.all |= 1 << a
	} else {
		s.server[i] |= 1 << a
	}
	return s
}

func (s ActionSet) String() string {
	var names []string
	for a := Action(1); a < actionEnd; a++ {
		if s.all&(1<<a) != 0 {
			names = append(names, a.String())
		}
		for i := range s.server {
			if s.server[i]&(1<<a) != 0 {
				names = append(names, fmt.Sprintf("%v@%d", a, i))
			}
		}
	}
	return strings.Join(names, ",")
}

// ParseActions parses a comma-separated list of action names (Label's),
// each alone (every server) or as NAME@I (server I's steps only): e.g.
// "DropMessage,DuplicateMessage,Restart,Timeout@3".
func ParseActions(list string) (ActionSet, error) {
	var s ActionSet
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, server, hasServer := strings.Cut(item, "@")
		a, ok := ParseAction(name)
		if !ok {
			return s, fmt.Errorf("unknown action %q", name)
		}
		var i ServerID
		if hasServer {
			n, err := strconv.Atoi(server)
			if err != nil || n < 1 || n > MaxServers {
				return s, fmt.Errorf("%q: want a server number 1..%d after @", item, MaxServers)
			}
			i = ServerID(n)
		}
		s = s.With(a, i)
	}
	return s, nil
}

// depthFirst expands the states of level, and everything reachable from
// them, depth first with one worker, and returns the deepest path's length
// and whether the search completed. The stack holds, for each state on the
// current path, the block of its successors not yet expanded.
func (x *explorer) depthFirst(level *levelQueue) (int, bool) {
	type frame struct {
		block []byte
		depth int
	}
	var stack []frame
	for _, b := range level.blocks {
		stack = append(stack, frame{b, 1})
	}
	w := x.newWorker()
	deepest := 1
	for len(stack) > 0 && !x.stop.Load() {
		top := &stack[len(stack)-1]
		if len(top.block) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		n, k := binary.Uvarint(top.block)
		enc := string(top.block[k : k+int(n)])
		top.block = top.block[k+int(n):]
		d := top.depth
		q := &levelQueue{}
		out := blockWriter{q: q, cur: make([]byte, 0, 512)} // not a 1 MiB block per state
		x.expand(enc, &out, w)
		out.flush()
		x.queued.Add(q.states - 1)
		for _, b := range q.blocks {
			stack = append(stack, frame{b, d + 1})
			deepest = max(deepest, d+1)
		}
		if x.opt.MaxDistinct > 0 && x.distinct.Load() > x.opt.MaxDistinct {
			return deepest, false
		}
	}
	return deepest, true
}
