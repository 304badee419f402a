// Command raftmutate is the project's mutation tester: it changes a
// package's source one small change at a time and asks a judge (the package
// tests, the explorer, or both) whether it notices. A mutant the judge
// passes is a change to the code that no check can see.
//
//	raftmutate -ops spec -files 'actions_*.go' -judge 'go run ./cmd/raftspec explore ...' ./spec
//	raftmutate -sample 20 -seed 1 ./impl/wal
//	raftmutate -list ./impl/raft
//	raftmutate -only impl/wal/wal.go:120:5:cmp-flip:0 ./impl/wal
//
// # Operators
//
// Each mutant is one change inside a function body of a non-test file:
//
//	and-drop     remove one conjunct of a && chain (a condition, a guard assigned
//	             to a variable, a returned predicate)
//	or-drop      remove one disjunct of a || chain, likewise
//	cmp-flip     < <-> <=, > <-> >=
//	eq-flip      == <-> !=
//	minmax-drop  replace min(a, b) (builtin, or a Min/Max helper) by one argument
//	if-negate    if c -> if !(c)
//	assign-drop  drop a field write: x.f = v -> _ = v (x.f++ and constant writes removed)
//	return-drop  remove a return that is not in tail position
//	off-by-one   x + 1 -> x and -> x + 2; x - 1 -> x and -> x - 2
//
// An operand whose removal would leave a local variable unused is kept
// evaluated instead: a && b && c without b is a && (b || true) && c.
//
// The capacity of make(T, len, cap) is never mutated: a capacity changes
// allocations, not results, so every such mutant is equivalent.
//
// The group spec is the first five (the operators for spec/);
// impl and all are all nine. Calls of the -asserts helpers are not mutated,
// nor the condition of an if whose body only calls one: a weakened
// assertion changes nothing a correct program does.
//
// # Running
//
// Each mutant is compiled and judged with go build's -overlay: the mutated
// file is written to a temporary directory, and the judge runs in the
// module root with GOFLAGS=-overlay=FILE -vet=off, so every go command it
// runs (go test, go run, go build) sees the mutant and nothing is copied.
// The judge also gets RAFTMUTATE_ID, RAFTMUTATE_DIR (a scratch directory)
// and RAFTMUTATE_OVERLAY. First the judge must pass on the unchanged
// package (the baseline); then each mutant is, by the judge's exit status
// and output:
//
//	killed       the judge failed (the failed tests, the violated invariant or
//	             the unreached property are recorded, with the last lines and the time)
//	timeout      it ran past -timeout (counted as killed, reported apart)
//	survived     it passed
//	build-error  the mutant does not compile (not counted)
//
// # Results
//
// Ids are file:line:col:operator:k and stable for the same source, so
// -only reruns chosen mutants and reports compare across runs; -sample N
// -seed S picks the same N mutants per package for the same source. The
// -equivalents file declares surviving mutants equivalent, one
// "ID argument" a line; more than 5% of a package's mutants declared
// equivalent is refused. The mutation score is
// killed / (run − build errors − equivalent). -report writes a markdown
// report, -json every outcome; the last line on stdout is
//
//	mutants=N killed=N timeout=N survived=N builderror=N equivalent=N score=0.NN result=ok|below-threshold
//
// and the exit status is 1 when the score is below -threshold. See
// docs/mutation.md.
package main
