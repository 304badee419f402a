// Package marks counts coverage marks: named points where the production
// code takes a path worth reaching (a fence released, a conflicting suffix
// truncated, a retried write deduplicated, a torn tail repaired…), as the
// spec has its "sometimes" properties. The simulator (conformance/sim,
// cmd/raftsim) enables counting, runs its seeds, and fails when a mark was
// never hit: a path no test reaches is a path no test checks.
//
// A package declares its marks once, at package level:
//
//	var markFenceReleased = marks.New("raft/fence-released", "a fenced member caught up and may lead again")
//
// and calls markFenceReleased.Hit() where the path is taken. Hit costs one
// atomic load when counting is off (production: it is off unless a test
// or the simulator turns it on) and one atomic add when it is on; it never
// allocates and never blocks.
//
// The pure packages (the protocol core impl/raft, the store impl/kv) import
// nothing with state of its own, this package included: they declare their
// marks as a small enum (raft.Mark, kv.Mark) and report each to a hook in
// their configuration (raft.Config.OnMark, kv.Options.OnMark). The replica
// runtime declares the core's marks here and installs the hook; the
// simulator does the same for the store's.
package marks
