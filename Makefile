# durableraft — see README.md. Every target works on a machine with only Go;
# TLC parts need Java and tla2tools.jar and are skipped (one line) without them.
GO      ?= go
PKGS    := ./...
BIN     := bin

.PHONY: all build test test-go test-race test-tlc check run model explore explore-marked bugs reach tlc long-trace sim-long sim-longrun bench bench-etcd bench-cluster clean proc-traces mutate-spec mutate-spec-ci mutate-raft mutate-wal mutate-quorum mutate-tracker mutate-raft-all mutate-wal-all mutate-quorum-all mutate-tracker-all course screenshots

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

## check: formatting, vet, and the layering: no impl/ package (tests
## included) reaches spec/; they meet only in conformance/, cmd/ and tla/.
check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@bad=$$($(GO) list -deps -test ./impl/... | grep -E '^github.com/durableraft/durableraft/spec(/|$$)'); \
	  if [ -n "$$bad" ]; then echo "impl/ reaches $$bad"; exit 1; fi

## test: what CI runs (.ci/run). Unit, table, scenario and fuzz-corpus tests,
## the race detector on packages with goroutines, small explorations of both
## spec profiles, and the TLC cross-checks when TLC is available.
test: check test-go test-race test-tlc

# -timeout: go test kills a package's binary after 10 minutes by default;
# tla's TLC cross-checks (when Java is present) and spec's explorations
# need more on a loaded 2-core machine. The suite's budget is make test's
# 20 minutes (DEVELOPERS.md), not one package's.
GO_TEST_TIMEOUT := 25m
test-go:
	$(GO) test -count=1 -timeout $(GO_TEST_TIMEOUT) $(PKGS)

# Packages that start goroutines run again under the race detector.
RACE_PKGS := $(shell $(GO) list -f '{{if .TestGoFiles}}{{.ImportPath}}{{end}}' ./impl/... ./cmd/... ./internal/... 2>/dev/null)
test-race:
	@if [ -n "$(RACE_PKGS)" ]; then $(GO) test -count=1 -timeout $(GO_TEST_TIMEOUT) -race $(RACE_PKGS); else echo "test-race: no packages with goroutines yet"; fi

test-tlc:
	@./tla/tlc.sh test

## proc-traces: the real-process tests of conformance/proc, verbose: every
## run (the bug switches' too, checked under their switches) has raftd
## --trace on every node, its per-node traces merged by Lamport clock and
## checked against the spec, kills and restarts included; the log says how
## many events and restarts each merge had. make test runs the same tests,
## traced the same way (docs/raftd.md: about 2.5 minutes on 2 cores).
proc-traces:
	$(GO) test -count=1 -run 'TestProcess' -v ./conformance/proc/

## run: the project's main job: a 3-node raftd cluster on 127.0.0.1 with
## its data under ./data; prints the addresses and a curl line, runs a short
## demo (writes, reads, the leader killed, a new leader, the old one back and
## caught up), then serves until Ctrl-C and stops every node cleanly.
run: build
	$(BIN)/raftctl demo --data ./data

## model: the model checker on a small model of each profile (every state,
## saying what it checked), then random walks deep enough for the corruption
## stories to end.
model: build
	@echo "== raft.tla itself, every reachable state (TLC finds 15254 distinct / 152835 generated)"
	$(BIN)/raftspec explore $(RUN_RAFT_BOUNDS)
	@echo "== the durable profile, every reachable state: 2 servers, a crash and a corruption"
	$(BIN)/raftspec explore $(RUN_DURABLE_BOUNDS)
	@echo "== the durable profile, 2000 random walks: 3 servers to term 3, a crash and a corruption"
	$(BIN)/raftspec simulate $(FULL_BOUNDS) -walks 2000 -depth 100 -workers 2 -sometimes $(RUN_WALK_REACHED)

RUN_RAFT_BOUNDS    := -profile raft -servers 2 -values 1 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 2
RUN_DURABLE_BOUNDS := -profile durable -servers 2 -values 1 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 2 -crashes 1 -corruptions 1
RUN_WALK_REACHED   := MemberTruncated,TruncatedVoterAsked,FenceReleased,LeaderAfterCorruption

## explore: the durable profile with every fix on, exhaustively at the bounds
## docs/explorer.md documents, then 10^4 seeded walks at the full bounds.
EXPLORE_BOUNDS  := -profile durable -servers 3 -values 2 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 1 -crashes 2 -corruptions 2
EXPLORE_REACHED := LeaderElected,EntryCommitted,FollowerLearnsCommit,CrashAfterCommit,CrashLosesUnsynced,FollowerFlushes,LearnedAheadOfDurable,MemberTruncated,CorruptAfterCommit,TruncatedVoterAsked
FULL_BOUNDS     := -profile durable -servers 3 -values 1 -max-term 3 -max-log 2 -max-dup 1 -max-msgs 2 -crashes 1 -corruptions 1
FULL_REACHED    := LeaderElected,EntryCommitted,FollowerLearnsCommit,ConflictTruncates,StaleResponseDropped,TwoLeadersElected,CrashAfterCommit,CrashLosesUnsynced,FollowerFlushes,LearnedAheadOfDurable,MemberTruncated,CorruptAfterCommit,TruncatedVoterAsked,FenceReleased,LeaderAfterCorruption
explore: build
	$(BIN)/raftspec explore $(EXPLORE_BOUNDS) -workers 2 -progress 30s -sometimes $(EXPLORE_REACHED)
	$(BIN)/raftspec simulate $(FULL_BOUNDS) -walks 10000 -depth 100 -workers 2 -sometimes $(FULL_REACHED)

## explore-marked: marked votes (issue 10 item 2; docs/durable-raft.md, "Marked
## votes adopted"): the 3-server exhaustive run at the bounds that complete
## here in minutes (term 2, one corruption, one power loss, symmetry: 3.5 M
## classes), then 20,000 walks at term 4, where a TRUNCATED member's marked
## grant elects a leader unanimously (-sometimes). Not in make test (about
## 3 + 1.5 minutes on 2 loaded cores).
MARKED_BOUNDS := -profile durable -servers 3 -values 1 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 1 -crashes 0 -corruptions 1 -power-losses 1 -marked-votes
MARKED_WALKS  := -profile durable -servers 3 -values 1 -max-term 4 -max-log 2 -max-dup 1 -max-msgs 2 -crashes 1 -corruptions 1 -power-losses 3 -marked-votes
explore-marked: build
	$(BIN)/raftspec explore $(MARKED_BOUNDS) -symmetry servers -workers 2 -progress 60s
	$(BIN)/raftspec simulate $(MARKED_WALKS) -walks 20000 -depth 80 -workers 2 -sometimes TruncatedGrantCounts,TruncatedLeads,UnanimousElection

## reach: the classic bugs of raft.tla (issue 20), each switched on alone
## (-bug) and found from scratch by an exhaustive search, its counterexample
## replayed; then the same bounds hold with every rule on (scripts/reach.sh,
## docs/explorer.md; about 20 s of CPU). .ci/run runs it after make test.
reach:
	./scripts/reach.sh

## bugs: replay every failure story (scripts/bugs.sh; 10-20 minutes).
bugs:
	./scripts/bugs.sh

## sim-long: raftsim, 10,000 seeds with every fault on and every check
## (docs/raftsim.md; 12 minutes of CPU: about 6 on two idle cores).
sim-long: build
	$(BIN)/raftsim -seeds 10000 -workers 2

## sim-power: raftsim, 200 seeds with every fault on, whole-cluster power
## losses that damage last synced batches among them (issue 10 item 2, in
## every fault since marked votes: docs/raftsim.md), past a failing seed.
sim-power: build
	$(BIN)/raftsim -seeds 200 -workers 2 -keep-going -faults all

## sim-longrun: one simulated run of the replica runtime with every fault
## kind and at least 20,000 acknowledged writes, its trace checked (15 s).
sim-longrun:
	SIM_LONG=1 $(GO) test -count=1 -timeout 0 -run 'TestSimLongRun' -v ./conformance/ | tail -3

## long-trace: a run of 20,000 client writes of the harness, with crashes,
## partitions and corruptions, traced (version 2) and checked against the
## spec, then rejected with one event changed (about a minute; make test runs
## 2,000 writes). LONG_TRACE_FILE=PATH keeps the trace.
LONG_TRACE_WRITES ?= 20000
long-trace:
	LONG_TRACE_WRITES=$(LONG_TRACE_WRITES) $(GO) test -count=1 -run '^TestLongRunTraced$$' -v ./conformance/coretrace

## course: every command docs/course.md shows, run in order (make test runs
## them too, in TestCourseCommands; TLC's lines skip there without TLC).
course: build
	$(GO) test -count=1 -run '^TestCourseCommands$$' -v ./cmd/raftspec

## screenshots: redraw docs/img (the course's pictures) in headless Chromium
## (Debian: apt-get install chromium; pngquant, if installed, makes them smaller).
screenshots:
	$(GO) test -count=1 -run '^TestCourseCommands$$' ./cmd/raftspec -screenshots $(CURDIR)/docs/img
	$(GO) test -count=1 -run '^(TestBrowserExplorer|TestBrowserLargeTrace)$$' ./viz -screenshots $(CURDIR)/docs/img

## tlc: every TLC model check and trace validation (needs Java + tla2tools.jar).
tlc:
	@./tla/tlc.sh all

## mutate-spec, mutate-raft, mutate-wal: mutation testing (docs/mutation.md).
## Not part of make test: each judges every mutant of its package (hundreds,
## 3-10 s each). MUTATE_FLAGS adds flags, e.g. MUTATE_FLAGS='-sample 40 -seed 1'
## for a sample, '-only @ids.txt' to rerun chosen mutants, '-workers 2'.
## Reports go to $(MUTATE_OUT)/.
MUTATE       = $(GO) run ./cmd/raftmutate -equivalents docs/mutation-equivalents.txt
MUTATE_FLAGS ?=
MUTATE_OUT   ?= $(BIN)/mutation
# spec/ is judged by the explorer at make run's bounds (both profiles, and
# the production actions), every reachability property those exhaustive
# runs reach, make run's walks, and check-trace of 600 walks, of the
# stored counterexamples and of the stored impl/ traces (tla/traces/impl:
# FlushTo events that do not say their cut), which exercises Step, the
# label replay; the action tables of spec/'s tests (a rule's effect in a
# chosen state, e.g. FenceReleases' c <= matched, which no invariant needs
# at these bounds) and the failure stories; the
# actions and what Next and Quorum build them from are mutated, not the
# explorer's machinery. Last, make reach's deep bounds with every rule on
# (scripts/reach.sh holds: 3 servers to term 3 with logs of 2, and Figure 8's
# term 5), which see the rules the classic bugs remove.
# The exhaustive runs at TLC-checked bounds must count TLC's states
# (tla/MC_raft_s2_m2, MC_durable_s2_m2, MC_production_s2_m1): a mutant that
# changes the state graph is killed as result=counts-differ.
RUN_PRODUCTION_TLC_BOUNDS := -profile durable -servers 2 -values 1 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 1 -crashes 1 -corruptions 1 -production
# (defined before the judge, which := expands at once)
# raft.tla at term 3 (a second election) and logs of 2 (a nextIndex of 3):
# tla/MC_raft_s2_t3_l2_m1, TLC-checked; where a reset of nextIndex to 1
# instead of Max({nextIndex - 1, 1}) changes the state graph.
RAFT_T3_L2_TLC_BOUNDS := -profile raft -servers 2 -values 1 -max-term 3 -max-log 2 -max-dup 1 -max-msgs 1
TRACE_RAFT_BOUNDS  := -profile raft -servers 3 -values 1 -max-term 3 -max-log 2 -max-dup 1 -max-msgs 2
MUTATE_SPEC_FILES  := actions_*.go,production.go,next.go,state.go
RUN_DURABLE_REACHED := LeaderElected,EntryCommitted,FollowerLearnsCommit,CrashAfterCommit,CrashLosesUnsynced,FollowerFlushes,LearnedAheadOfDurable,MemberTruncated,CorruptAfterCommit,TruncatedVoterAsked
MUTATE_SPEC_JUDGE  := go build -o "$$RAFTMUTATE_DIR/raftspec" ./cmd/raftspec && r="$$RAFTMUTATE_DIR/raftspec" && \
	go test -count=1 -run "TestRaftActions|TestDurableActions|TestProductionActions|TestStories" ./spec && \
	$$r explore $(RUN_RAFT_BOUNDS) -sometimes LeaderElected,EntryCommitted,FollowerLearnsCommit,RestartAfterCommit -expect-counts 15254/152835 && \
	$$r explore $(RUN_DURABLE_BOUNDS) -sometimes $(RUN_DURABLE_REACHED) -expect-counts 57491/520445 && \
	$$r explore $(RUN_DURABLE_BOUNDS) -production -sometimes $(RUN_DURABLE_REACHED) && \
	$$r explore $(RUN_PRODUCTION_TLC_BOUNDS) -expect-counts 33144/309225 && \
	$$r explore $(RAFT_T3_L2_TLC_BOUNDS) -expect-counts 59600/472447 && \
	$$r simulate $(FULL_BOUNDS) -walks 2000 -depth 100 -sometimes $(RUN_WALK_REACHED) && \
	$$r simulate $(FULL_BOUNDS) -production -walks 2000 -depth 100 && \
	d="$$RAFTMUTATE_DIR" && mkdir -p "$$d/raft" "$$d/durable" "$$d/production" && \
	$$r simulate $(TRACE_RAFT_BOUNDS) -walks 200 -depth 100 -trace-dir "$$d/raft" && \
	$$r simulate $(FULL_BOUNDS) -walks 200 -depth 100 -trace-dir "$$d/durable" && \
	$$r simulate $(FULL_BOUNDS) -production -walks 200 -depth 100 -trace-dir "$$d/production" && \
	$$r check-trace "$$d"/raft/*.ndjson "$$d"/durable/*.ndjson "$$d"/production/*.ndjson spec/testdata/counterexamples/*.ndjson tla/traces/impl/*.ndjson && \
	RAFTSPEC="$$r" ./scripts/reach.sh holds
mutate-spec:
	@mkdir -p $(MUTATE_OUT)
	$(MUTATE) -ops spec -files '$(MUTATE_SPEC_FILES)' -judge '$(MUTATE_SPEC_JUDGE)' \
	  -report $(MUTATE_OUT)/spec.md -json $(MUTATE_OUT)/spec.json $(MUTATE_FLAGS) ./spec
# mutate-spec-ci: what .ci/run runs of mutate-spec, the issue's guards
# (docs/mutation.md, "The issue's single-guard removals as mutants"): each
# must be killed. An edit above one moves its id; raftmutate then stops with
# "no such mutant": look it up again with -list.
MUTATE_SPEC_CI_IDS := spec/actions_raft.go:444:40:and-drop:1,spec/actions_raft.go:358:18:and-drop:1,spec/actions_append.go:163:39:and-drop:2,spec/actions_append.go:144:68:and-drop:2,spec/actions_raft.go:445:41:and-drop:2,spec/state.go:243:21:cmp-flip:0,spec/actions_raft.go:445:41:and-drop:1
mutate-spec-ci:
	$(MAKE) mutate-spec MUTATE_FLAGS='-only $(MUTATE_SPEC_CI_IDS) -threshold 1'
# impl/ packages are judged by their own tests and the conformance tests,
# each mutant by the tests that cover its block (-tests; docs/mutation.md,
# "Test selection by coverage"). MUTATE_SKIP_TESTS are left to the second
# pass (make mutate-raft-all, mutate-wal-all, -only with the survivors): the
# whole-replica simulations and the process tests, 10-250 s each, which
# would cost hours over every mutant. violated is the WAL's assertion helper
# for hot paths (if !ok { violated(...) }).
MUTATE_IMPL_TESTS := ./conformance/...
MUTATE_SKIP_TESTS := ^conformance\.(TestSimulatedRuntime|TestBugCatalogue|TestSimLongRun)$$|^conformance/proc\.
# Log calls (slog's Debug, Info, Warn, Error, and impl/raft's alert) are formatting calls like
# fmt's: an edit in their arguments changes what a message says.
MUTATE_IMPL_SKIP_CALLS := fmt.Errorf,fmt.Sprintf,fmt.Sprint,fmt.Sprintln,fmt.Fprintf,fmt.Fprint,fmt.Fprintln,fmt.Printf,fmt.Print,fmt.Println,errors.New,Debug,Info,Warn,Error,alert
MUTATE_IMPL = $(MUTATE) -asserts assert,failf,violated -skip-calls $(MUTATE_IMPL_SKIP_CALLS)
mutate-raft:
	@mkdir -p $(MUTATE_OUT)
	$(MUTATE_IMPL) -tests './impl/raft/... $(MUTATE_IMPL_TESTS)' -skip-tests '$(MUTATE_SKIP_TESTS)' \
	  -report $(MUTATE_OUT)/raft.md -json $(MUTATE_OUT)/raft.json $(MUTATE_FLAGS) ./impl/raft
mutate-wal:
	@mkdir -p $(MUTATE_OUT)
	$(MUTATE_IMPL) -tests './impl/wal/... $(MUTATE_IMPL_TESTS)' -skip-tests '$(MUTATE_SKIP_TESTS)' \
	  -report $(MUTATE_OUT)/wal.md -json $(MUTATE_OUT)/wal.json $(MUTATE_FLAGS) ./impl/wal
# impl/raft's quorum/ and tracker/ packages, judged by every test of impl/raft
# (which is where their rules are used) and the conformance tests.
mutate-quorum mutate-tracker: mutate-%:
	@mkdir -p $(MUTATE_OUT)
	$(MUTATE_IMPL) -tests './impl/raft/... $(MUTATE_IMPL_TESTS)' -skip-tests '$(MUTATE_SKIP_TESTS)' \
	  -report $(MUTATE_OUT)/$*.md -json $(MUTATE_OUT)/$*.json $(MUTATE_FLAGS) ./impl/raft/$*
# The second pass: every test of the judge, still selected by coverage.
mutate-raft-all mutate-wal-all mutate-quorum-all mutate-tracker-all: mutate-%-all:
	$(MAKE) mutate-$* MUTATE_SKIP_TESTS='^$$' MUTATE_OUT=$(MUTATE_OUT)/all

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## bench-etcd: a 3-node raftd cluster (pipelined and HTTP), a no-op server
## behind the same HTTP API, and a 3-node etcd cluster, side by side in one
## run on the real disk, at 1 and 256 clients (docs/performance.md; about a
## minute). Without etcd-server installed its fields are na, said in one
## line. The tool is in its own module (bench/) so that etcd's client
## stays out of the server's dependencies. BENCH_FLAGS adds flags, e.g.
## BENCH_FLAGS='-clients 1,16,256,1024 -duration 10s -profile bin/prof'.
BENCH_FLAGS ?=
bench-etcd: build
	cd bench && $(GO) build -o ../$(BIN)/raftbench ./cmd/raftbench
	$(BIN)/raftbench -raftd $(BIN)/raftd $(BENCH_FLAGS)

## bench-cluster: the same run at the issue's client counts, 1, 16, 256 and
## 1,024 (about two minutes).
bench-cluster: build
	cd bench && $(GO) build -o ../$(BIN)/raftbench ./cmd/raftbench
	$(BIN)/raftbench -raftd $(BIN)/raftd -clients 1,16,256,1024 $(BENCH_FLAGS)

clean:
	rm -rf $(BIN)
