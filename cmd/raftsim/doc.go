// Command raftsim runs the deterministic simulator of conformance/sim: 3 to
// 5 replica runtimes (impl/replica, stepped) over the real WAL on in-memory
// disks, the KV store under each, clients with sessions, every fault, and
// every check on every seed (the invariants, liveness after the faults
// heal, the at-most-once checker, durability of every answered write,
// porcupine on the client history, the spec's trace checker).
//
//	raftsim -seeds 10000                 seeds 1..10000, every fault on
//	raftsim -seed 42 -trace t.ndjson -history h.ndjson
//	                                     replay one seed, write its trace and history
//	raftsim -seeds 500 -faults crashes,partitions -drop 0.1 -nodes 5
//	raftsim -seeds 300 -bugs ack-before-commit
//	                                     a catalogued bug (docs/raftsim.md)
//
// Progress goes to stderr. Stdout has a line per fault kind
// ("fault KIND N") and per coverage mark ("mark NAME N"), then, last, the
// contract other tools parse:
//
//	seeds=N ops=N faults=N violations=N result=ok
//	seeds=N ops=N faults=N violations=N result=violation seed=S   (exit status 1)
//
// S is the smallest failing seed whatever the number of workers: the run
// stops handing out seeds above a failing one and finishes those below, and
// the counts cover the seeds up to S (with -keep-going every seed runs and
// violations counts every failing one). A failing seed's trace, history and
// porcupine's visualization are written to -out, and raftsim prints the
// command that replays it.
package main
