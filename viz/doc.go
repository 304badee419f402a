// Package viz draws runs and states of the protocol for a browser.
//
// A run (any trace the project writes, version 1 or 2: an explorer
// counterexample, a simulator walk, an impl/ or raftd trace) becomes one
// self-contained HTML page ([WritePage]): a space-time diagram with a lane
// per node, messages as arrows from their send to every event that handles
// them, drops and duplicates marked, and each node's state as you step.
// Sends and receives are matched as the trace checker matches them: by the
// message's content ([Build] reconstructs what each step sends from the
// step and the node's post-state). The page carries its data inline and
// hand-written HTML, CSS and JavaScript embedded in this package: no
// network, no build step. Large traces are drawn in a window that follows
// the scroll position, so 10^5 events load and scroll.
//
// The state-space explorer ([Explorer]) serves the model of spec/ over
// HTTP: start at Init, list the enabled actions, take one, go back, see
// every variable and the invariants at each state, jump to a counterexample
// the explorer finds or that a trace file holds. Its JSON API is
// documented on [Explorer.Handler]; docs/explorer.md has the walk-through.
//
// viz reads spec/ only through its public API and the trace format.
package viz
