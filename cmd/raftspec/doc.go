// Command raftspec model-checks the specification in spec/: it explores the
// reachable states of a bounded model, takes random walks through it, and
// replays traces (from spec/ or impl/) against it; and it shows them: it
// draws a trace as a self-contained HTML page, serves the model's state
// space to a browser, and replays the failure stories step by step.
//
//	raftspec explore -profile raft -servers 3 -values 1 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 1
//	raftspec simulate -profile durable -servers 3 ... -walks 10000 -depth 60
//	raftspec check-trace FILE...
//	raftspec viz TRACE... > run.html
//	raftspec serve -profile durable -servers 2 ... [-trace FILE]
//	raftspec story spec/testdata/stories/truncated-voter.txt
//
// The last line explore prints on stdout is the contract other tools parse:
//
//	distinct=N generated=N depth=N result=ok
//	distinct=N generated=N depth=N result=violation invariant=NAME trace=PATH   (exit status 1)
//
// A counterexample also prints, on stderr, the command that draws it.
package main
