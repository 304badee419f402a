package rafttest

import (
	"fmt"

	"github.com/durableraft/durableraft/impl/raft"
)

// Membership commands and cluster operations (docs/membership.md).

// ChangeConfig asks node leader for a single-server change of id.
func (c *Cluster) ChangeConfig(leader raft.NodeID, kind raft.ConfChangeKind, id raft.NodeID) (uint64, error) {
	sn := c.Node(leader)
	if sn == nil || sn.Node == nil {
		return 0, fmt.Errorf("n%d is down", leader)
	}
	index, err := sn.Node.ChangeConfig(raft.ConfChange{Kind: kind, ID: id})
	c.handle(sn)
	return index, err
}

// handleMembership runs the membership commands; known is false for any
// other command.
func (e *Env) handleMembership(c Cmd) (known bool, err error) {
	kinds := map[string]raft.ConfChangeKind{"add-learner": raft.ConfAddLearner, "promote": raft.ConfPromote, "remove": raft.ConfRemove}
	switch c.Name {
	case "add-learner", "promote", "remove":
		// Example: add-learner 1 4   (the leader n1 adds n4 as a learner; promote 1 4; remove 1 3)
		leader, err := e.id(c, 0)
		if err != nil {
			return true, err
		}
		id, err := e.id(c, 1)
		if err != nil {
			return true, err
		}
		index, err := e.C.ChangeConfig(leader, kinds[c.Name], id)
		if err != nil {
			e.C.logf("n%d: %v", leader, err)
		} else {
			e.C.logf("n%d: %s %d at index %d", leader, c.Name, id, index)
		}
		return true, nil
	case "members":
		// Example: members 1 2   (the configuration each node has in force)
		ids, err := e.ids(c)
		if err != nil {
			return true, err
		}
		for _, id := range ids {
			sn := e.C.Node(id)
			if sn.Node == nil {
				e.C.logf("n%d: down", id)
				continue
			}
			e.C.logf("n%d: %v", id, sn.Node.Membership())
		}
		return true, nil
	}
	return false, nil
}
