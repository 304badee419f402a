//go:build race

package raft

// raceEnabled: the race detector instruments allocations (counts differ).
const raceEnabled = true
