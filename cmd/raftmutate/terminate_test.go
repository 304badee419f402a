package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// terminatesList follows the Go specification's terminating statements,
// which decide whether removing a return leaves "missing return".
func TestTerminates(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{"return 1", true},
		{"panic(1)", true},
		{"x := 1; _ = x", false},
		{"for {}", true},
		{"for { break }", false},
		{"for { for { break } }", true},
		{"for { switch { case true: break } }", true},
		{"L: for { for { break L } }", false},
		{"for c {}", false},
		{"for range xs {}", false},
		{"if c { return 1 } else { panic(2) }", true},
		{"if c { return 1 }", false},
		{"if c { return 1 } else if d { return 2 }", false},
		{"if c { return 1 } else if d { return 2 } else { return 3 }", true},
		{"switch { case c: return 1; default: return 2 }", true},
		{"switch { case c: return 1 }", false},
		{"switch { case c: break; default: return 2 }", false},
		{"switch { case c: fallthrough; default: return 2 }", true},
		{"select {}", true},
		{"{ return 1 }", true},
		{"return 1;;", true},
		{"goto L; L: return 1", true},
	} {
		src := "package p\nfunc f() int {\n" + c.body + "\n}\n"
		f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		body := f.Decls[0].(*ast.FuncDecl).Body
		if got := terminatesList(body.List, nil); got != c.want {
			t.Errorf("%s: terminates %v, want %v", c.body, got, c.want)
		}
	}
}

// Without the removed statement, a list that ended in it no longer
// terminates.
func TestTerminatesWithoutRemoved(t *testing.T) {
	src := "package p\nfunc f(c bool) int {\nif c { return 1 } else { return 2 }\n}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	body := f.Decls[0].(*ast.FuncDecl).Body
	ret := body.List[0].(*ast.IfStmt).Body.List[0]
	if terminatesList(body.List, ret) {
		t.Error("if without its then-return still terminates")
	}
	if !terminatesList(body.List, nil) {
		t.Error("the if/else of returns does not terminate")
	}
}
