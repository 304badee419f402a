// Package quorum is the arithmetic of one configuration's majority, as
// etcd-io/raft's quorum/ (its design, not its code): which index a
// majority of the voters has acknowledged (the leader's commit rule), and
// how an election stands given the votes received.
//
// A configuration here is one set of voters: the membership changes of
// impl/raft are single-server changes (docs/membership.md), so two
// consecutive configurations' majorities overlap and no joint quorum is
// needed. Learners are not in a Majority: they never count.
//
// The package is pure and allocation-free for configurations of up to
// seven voters (CommittedIndex sorts on the stack).
package quorum
