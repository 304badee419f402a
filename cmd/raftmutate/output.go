package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// judgeOutput collects what a judge prints (stdout and stderr together):
// the last lines, and the markers that say what failed. It keeps a bounded
// amount however much the judge prints.
type judgeOutput struct {
	partial []byte
	last    []string // ring of the last keepLines lines
	next    int
	full    bool

	failed      []string // go test: names of failed tests, in order
	panicMsg    string   // the first "panic: " line
	invariant   string   // raftspec: result=violation invariant=NAME
	unreachable bool     // raftspec: result=unreachable
	rejected    string   // raftspec check-trace: the first "PATH: REJECTED: why" line
	errorLine   string   // the first "Error: " line (raftspec explains its verdict there)
	buildFailed bool     // go test: [build failed] / [setup failed]; go build/run: compile errors
	sawPkgLine  bool     // a "# pkg" line, which precedes compile errors
}

const keepLines = 400

var (
	failRE      = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	invariantRE = regexp.MustCompile(`result=violation invariant=(\S+)`)
	buildRE     = regexp.MustCompile(`\[(build|setup) failed\]`)
	compileRE   = regexp.MustCompile(`^\S+\.go:\d+:\d+: `)
)

func (o *judgeOutput) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			o.partial = append(o.partial, p...)
			if len(o.partial) > 64<<10 { // a line without end: cut it
				o.line(string(o.partial))
				o.partial = o.partial[:0]
			}
			break
		}
		o.partial = append(o.partial, p[:i]...)
		o.line(string(o.partial))
		o.partial = o.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (o *judgeOutput) flush() {
	if len(o.partial) > 0 {
		o.line(string(o.partial))
		o.partial = nil
	}
}

func (o *judgeOutput) line(l string) {
	if o.last == nil {
		o.last = make([]string, keepLines)
	}
	o.last[o.next] = l
	o.next = (o.next + 1) % keepLines
	if o.next == 0 {
		o.full = true
	}
	switch {
	case failRE.MatchString(l):
		name := failRE.FindStringSubmatch(l)[1]
		if len(o.failed) < 1000 {
			o.failed = append(o.failed, name)
		}
	case strings.HasPrefix(l, "panic: ") && o.panicMsg == "":
		o.panicMsg = l
	case strings.HasPrefix(l, "Error: ") && o.errorLine == "":
		o.errorLine = l
	case strings.HasPrefix(l, "# "):
		o.sawPkgLine = true
	case o.sawPkgLine && compileRE.MatchString(l):
		o.buildFailed = true
	}
	if m := invariantRE.FindStringSubmatch(l); m != nil {
		o.invariant = m[1]
	}
	if o.rejected == "" && strings.Contains(l, ": REJECTED: ") {
		o.rejected = l
	}
	if strings.Contains(l, "result=unreachable") {
		o.unreachable = true
	}
	if buildRE.MatchString(l) {
		o.buildFailed = true
	}
}

// lines returns the last n non-empty lines.
func (o *judgeOutput) lines(n int) []string {
	var all []string
	if o.full {
		all = append(all, o.last[o.next:]...)
	}
	all = append(all, o.last[:o.next]...)
	var out []string
	for i := len(all) - 1; i >= 0 && len(out) < n; i-- {
		if strings.TrimSpace(all[i]) != "" {
			out = append(out, all[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// killedBy says what failed: the invariant, the unreached property, the
// failed tests (the innermost ones), or the panic; exit is the judge's
// exit status, the answer when nothing else is recognised.
func (o *judgeOutput) killedBy(exit int) string {
	switch {
	case o.invariant != "":
		return "invariant " + o.invariant
	case o.unreachable:
		return "unreachable: " + strings.TrimPrefix(o.errorLine, "Error: ")
	case o.rejected != "":
		return "trace rejected: " + oneLine(o.rejected)
	case len(o.failed) > 0 && o.panicMsg != "":
		return "tests " + summarizeTests(o.failed) + "; " + oneLine(o.panicMsg)
	case len(o.failed) > 0:
		return "tests " + summarizeTests(o.failed)
	case o.panicMsg != "":
		return o.panicMsg
	}
	last := o.lines(1)
	if len(last) == 1 {
		return fmt.Sprintf("exit status %d: %s", exit, oneLine(last[0]))
	}
	return fmt.Sprintf("exit status %d", exit)
}

// summarizeTests lists the failed tests that have no failed subtest, at
// most three, in the order go test reported them.
func summarizeTests(names []string) string {
	var leaves []string
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		parent := false
		for _, m := range names {
			if strings.HasPrefix(m, n+"/") {
				parent = true
				break
			}
		}
		if !parent {
			leaves = append(leaves, n)
		}
	}
	const show = 3
	if len(leaves) <= show {
		return strings.Join(leaves, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(leaves[:show], ", "), len(leaves)-show)
}
