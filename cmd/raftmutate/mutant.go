package main

import (
	"fmt"
	"strings"
)

// A Mutant is one change to one file: the bytes [start, end) of the file
// replaced by repl.
type Mutant struct {
	// ID is file:line:col:operator:k. The position is that of the changed
	// node (the first operator token of a chain, the operator of a
	// comparison or sum, the call of min/max, the if keyword, the removed
	// statement); k numbers the alternatives at that node (which conjunct
	// is removed, which argument is kept). The same source gives the same
	// ids, so reports and the equivalents file compare across runs.
	ID   string   `json:"id"`
	Pkg  string   `json:"package"`
	File string   `json:"file"` // slash-separated, relative to the module root
	Line int      `json:"line"`
	Col  int      `json:"col"`
	Op   Operator `json:"operator"`
	K    int      `json:"k"`
	Func string   `json:"func"`
	Old  string   `json:"old"` // the changed lines, on one line
	New  string   `json:"new"` // the same lines after the change

	absFile    string
	start, end int
	repl       string
	// anchorLine:anchorCol is where coverage is looked up: the id's
	// position, or for a mutant in a case list the switch's (walk.go).
	anchorLine, anchorCol int
	index                 int // in its package's list (ranked, sample)
}

func (m *Mutant) setID() {
	m.ID = fmt.Sprintf("%s:%d:%d:%s:%d", m.File, m.Line, m.Col, m.Op, m.K)
}

// Diff is the change as one human-readable line.
func (m *Mutant) Diff() string {
	return m.Old + "  =>  " + m.New
}

// Apply returns src with the mutation applied.
func (m *Mutant) Apply(src []byte) []byte {
	out := make([]byte, 0, len(src)-(m.end-m.start)+len(m.repl))
	out = append(out, src[:m.start]...)
	out = append(out, m.repl...)
	return append(out, src[m.end:]...)
}

// describe fills Old and New from the lines the change touches.
func (m *Mutant) describe(src []byte) {
	lo := m.start
	for lo > 0 && src[lo-1] != '\n' {
		lo--
	}
	hi := m.end
	for hi < len(src) && src[hi] != '\n' {
		hi++
	}
	m.Old = oneLine(string(src[lo:hi]))
	m.New = oneLine(string(src[lo:m.start]) + m.repl + string(src[m.end:hi]))
	if m.New == "" {
		m.New = "(removed)"
	}
}

const describeMax = 240

// oneLine collapses white space and shortens s for a report cell.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > describeMax {
		s = string(r[:describeMax-1]) + "…"
	}
	return s
}
