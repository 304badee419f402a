package main

import (
	"go/ast"
	"go/token"
	"regexp"
	"strings"
)

// generator walks one file's function bodies and collects mutants.
type generator struct {
	cfg     *genConfig
	fset    *token.FileSet
	tf      *token.File
	src     []byte
	rel     string
	imports map[string]bool
	out     []Mutant

	fn     string         // enclosing declared function, for reports
	fnType *ast.FuncType  // innermost enclosing function (declared or literal)
	fnBody *ast.BlockStmt // its body
	tail   map[ast.Stmt]bool
	// sameNext: returns whose removal lands on an identical return with
	// nothing run in between (redundantReturns).
	sameNext map[ast.Stmt]bool

	inChain map[*ast.BinaryExpr]bool // inner nodes of a chain already generated
	uses    *uses                    // of the declared function being walked

	// caseLists are the expression lists of case clauses (case … :), with
	// the switch or select they belong to. Go's coverage counts no block
	// there: a mutant in one is anchored at its switch, whose header is in
	// the block before it and runs whenever a case expression does.
	caseLists []caseList
}

type caseList struct{ from, to, anchor token.Pos }

// funcBody walks the body of a declared function or a function literal.
func (g *generator) funcBody(ft *ast.FuncType, body *ast.BlockStmt) {
	saveType, saveBody, saveTail, saveNext := g.fnType, g.fnBody, g.tail, g.sameNext
	g.fnType, g.fnBody, g.tail, g.sameNext = ft, body, map[ast.Stmt]bool{}, map[ast.Stmt]bool{}
	markTailList(body.List, g.tail)
	g.redundantReturns(body)
	g.walk(body)
	g.fnType, g.fnBody, g.tail, g.sameNext = saveType, saveBody, saveTail, saveNext
}

// redundantReturns marks the returns whose removal changes nothing: the
// last statement of a branch of an if, switch or select that is followed in
// its statement list by a return of the same text, whose results call
// nothing and receive from no channel. Removed, control leaves the branch
// and reaches that return at once, which returns the same values.
func (g *generator) redundantReturns(body *ast.BlockStmt) {
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false // its own body is walked by funcBody
		}
		var list []ast.Stmt
		switch n := n.(type) {
		case *ast.BlockStmt:
			list = n.List
		case *ast.CaseClause:
			list = n.Body
		case *ast.CommClause:
			list = n.Body
		}
		for i := 0; i+1 < len(list); i++ {
			next, ok := list[i+1].(*ast.ReturnStmt)
			if !ok || !pureResults(next) {
				continue
			}
			switch list[i].(type) {
			case *ast.IfStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
			default:
				continue
			}
			ends := map[ast.Stmt]bool{}
			markTail(list[i], ends)
			for st := range ends {
				if r, ok := st.(*ast.ReturnStmt); ok && g.text(r) == g.text(next) {
					g.sameNext[r] = true
				}
			}
		}
		return true
	})
}

// pureResults says whether a return's results call no function and receive
// from no channel, so that evaluating them twice gives the same values.
func pureResults(r *ast.ReturnStmt) bool {
	pure := true
	for _, e := range r.Results {
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr, *ast.FuncLit:
				pure = false
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					pure = false
				}
			}
			return pure
		})
	}
	return pure
}

func (g *generator) walk(root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			g.funcBody(n.Type, n.Body)
			return false
		case *ast.CallExpr:
			if g.isAssertCall(n) || callIn(n, g.cfg.skipCalls) {
				return false
			}
			if isMakeWithCap(n) {
				g.walk(n.Args[1]) // the length; a capacity changes no result, only allocations
				return false
			}
			g.minMax(n)
		case *ast.IfStmt:
			if g.isAssertIf(n) {
				if n.Init != nil {
					g.walk(n.Init)
				}
				return false
			}
			g.ifNegate(n)
		case *ast.BlockStmt:
			g.stmtList(n.List)
		case *ast.CaseClause:
			g.stmtList(n.Body)
		case *ast.CommClause:
			g.stmtList(n.Body)
		case *ast.BinaryExpr:
			g.binary(n)
		case *ast.SwitchStmt:
			g.noteCases(n.Pos(), n.Body)
		case *ast.TypeSwitchStmt:
			g.noteCases(n.Pos(), n.Body)
		case *ast.SelectStmt:
			g.noteCases(n.Pos(), n.Body)
		}
		return true
	})
}

// add records a mutant replacing [from, to) by repl; at is the position
// its id names.
func (g *generator) add(op Operator, k int, at, from, to token.Pos, repl string) {
	if !g.cfg.ops[op] {
		return
	}
	p := g.fset.Position(at)
	m := Mutant{File: g.rel, Line: p.Line, Col: p.Column, Op: op, K: k, Func: g.fn,
		start: g.tf.Offset(from), end: g.tf.Offset(to), repl: repl}
	m.anchorLine, m.anchorCol = p.Line, p.Column
	for _, c := range g.caseLists {
		if c.from <= at && at < c.to {
			a := g.fset.Position(c.anchor)
			m.anchorLine, m.anchorCol = a.Line, a.Column
		}
	}
	m.setID()
	g.out = append(g.out, m)
}

// noteCases records the case lists of a switch or select body.
func (g *generator) noteCases(anchor token.Pos, body *ast.BlockStmt) {
	for _, c := range body.List {
		switch c := c.(type) {
		case *ast.CaseClause:
			g.caseLists = append(g.caseLists, caseList{c.Case, c.Colon, anchor})
		case *ast.CommClause:
			g.caseLists = append(g.caseLists, caseList{c.Case, c.Colon, anchor})
		}
	}
}

func (g *generator) text(n ast.Node) string {
	return string(g.src[g.tf.Offset(n.Pos()):g.tf.Offset(n.End())])
}

// isAssertCall says whether c calls one of the configured assertion
// helpers; its arguments are not mutated.
func (g *generator) isAssertCall(c *ast.CallExpr) bool {
	return callIn(c, g.cfg.asserts)
}

// callIn says whether c calls a function of set: "name" matches a call of
// name or of x.name, "pkg.name" only a call of pkg.name.
func callIn(c *ast.CallExpr, set map[string]bool) bool {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return set[f.Name]
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok && set[x.Name+"."+f.Sel.Name] {
			return true
		}
		return set[f.Sel.Name]
	}
	return false
}

// isAssertIf says whether s is "if cond { assertHelper(...) }": cond is an
// assertion, and a weakened assertion is not observable in a correct
// program.
func (g *generator) isAssertIf(s *ast.IfStmt) bool {
	if s.Else != nil || len(s.Body.List) != 1 {
		return false
	}
	es, ok := s.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	c, ok := es.X.(*ast.CallExpr)
	return ok && g.isAssertCall(c)
}

// chain generates the and-drop and or-drop mutants of a && or || chain
// (a condition, a guard assigned to a variable, a returned predicate): one
// mutant per operand, that operand removed. a && b && c is one chain of
// three; the chains inside parentheses are chains of their own.
func (g *generator) chain(e *ast.BinaryExpr) {
	if g.inChain[e] {
		return
	}
	op := OpAndDrop
	if e.Op == token.LOR {
		op = OpOrDrop
	}
	operands, first := g.flatten(e, e.Op)
	neutral := " || true)" // x && y && z without y is x && (y || true) && z
	if e.Op == token.LOR {
		neutral = " && false)"
	}
	for k, x := range operands {
		switch {
		case g.uses.lastUse(x):
			// Removing x would leave a local unused: keep it evaluated,
			// its value ignored.
			g.add(op, k, first, x.Pos(), x.End(), "("+g.text(x)+neutral)
		case k == 0:
			g.add(op, k, first, x.Pos(), operands[1].Pos(), "")
		default:
			g.add(op, k, first, operands[k-1].End(), x.End(), "")
		}
	}
}

// flatten returns the operands of the chain of op rooted at e and the
// position of its first operator token, and marks the chain's inner nodes.
func (g *generator) flatten(e *ast.BinaryExpr, op token.Token) ([]ast.Expr, token.Pos) {
	var left []ast.Expr
	first := e.OpPos
	if x, ok := e.X.(*ast.BinaryExpr); ok && x.Op == op {
		g.inChain[x] = true
		left, first = g.flatten(x, op)
	} else {
		left = []ast.Expr{e.X}
	}
	return append(left, e.Y), first
}

var flips = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS,
	token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.EQL: token.NEQ, token.NEQ: token.EQL,
}

// binary generates cmp-flip, eq-flip and off-by-one mutants.
func (g *generator) binary(e *ast.BinaryExpr) {
	opEnd := e.OpPos + token.Pos(len(e.Op.String()))
	switch e.Op {
	case token.LSS, token.LEQ, token.GTR, token.GEQ:
		g.add(OpCmpFlip, 0, e.OpPos, e.OpPos, opEnd, flips[e.Op].String())
	case token.EQL, token.NEQ:
		g.add(OpEqFlip, 0, e.OpPos, e.OpPos, opEnd, flips[e.Op].String())
	case token.LAND, token.LOR:
		g.chain(e)
	case token.ADD, token.SUB:
		if isOne(e.Y) {
			g.add(OpOffByOne, 0, e.OpPos, e.X.End(), e.Y.End(), "")
			g.add(OpOffByOne, 1, e.OpPos, e.Y.Pos(), e.Y.End(), "2")
		} else if e.Op == token.ADD && isOne(e.X) {
			g.add(OpOffByOne, 0, e.OpPos, e.X.Pos(), e.Y.Pos(), "")
			g.add(OpOffByOne, 1, e.OpPos, e.X.Pos(), e.X.End(), "2")
		}
	}
}

func isOne(e ast.Expr) bool {
	l, ok := e.(*ast.BasicLit)
	return ok && l.Kind == token.INT && l.Value == "1"
}

// minMaxRE matches the builtins and helpers such as Max, maxU8, MinIndex.
var minMaxRE = regexp.MustCompile(`^(min|max|Min|Max)([A-Z0-9_][A-Za-z0-9_]*)?$`)

// minMax generates one minmax-drop mutant per argument: the call replaced
// by that argument.
func (g *generator) minMax(c *ast.CallExpr) {
	var name string
	switch f := c.Fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
	}
	if !minMaxRE.MatchString(name) || len(c.Args) < 2 || c.Ellipsis.IsValid() {
		return
	}
	for k, a := range c.Args {
		repl := g.text(a)
		if !isPrimary(a) {
			repl = "(" + repl + ")"
		}
		g.add(OpMinMaxDrop, k, c.Pos(), c.Pos(), c.End(), repl)
	}
}

// isMakeWithCap says whether c is make(T, len, cap): its capacity is not
// mutated (every mutant of it is equivalent: append grows a slice that
// is short of room).
func isMakeWithCap(c *ast.CallExpr) bool {
	f, ok := c.Fun.(*ast.Ident)
	return ok && f.Name == "make" && len(c.Args) == 3
}

// isPrimary says whether e can stand anywhere an operand can without
// parentheses.
func isPrimary(e ast.Expr) bool {
	switch e.(type) {
	case *ast.Ident, *ast.BasicLit, *ast.CompositeLit, *ast.FuncLit, *ast.ParenExpr,
		*ast.SelectorExpr, *ast.IndexExpr, *ast.IndexListExpr, *ast.SliceExpr,
		*ast.TypeAssertExpr, *ast.CallExpr:
		return true
	}
	return false
}

// ifNegate generates if c -> if !(c). A condition that is one == or !=
// comparison is left to eq-flip, which makes the same mutant.
func (g *generator) ifNegate(s *ast.IfStmt) {
	cond := s.Cond
	if b, ok := cond.(*ast.BinaryExpr); ok && (b.Op == token.EQL || b.Op == token.NEQ) && g.cfg.ops[OpEqFlip] {
		return
	}
	var repl string
	switch {
	case isNot(cond):
		repl = g.text(cond.(*ast.UnaryExpr).X)
	case isPrimary(cond):
		repl = "!" + g.text(cond)
	default:
		repl = "!(" + g.text(cond) + ")"
	}
	g.add(OpIfNegate, 0, s.If, cond.Pos(), cond.End(), repl)
}

func isNot(e ast.Expr) bool {
	u, ok := e.(*ast.UnaryExpr)
	return ok && u.Op == token.NOT
}

// stmtList generates the statement removals of one statement list.
func (g *generator) stmtList(list []ast.Stmt) {
	for _, s := range list {
		switch s := s.(type) {
		case *ast.AssignStmt:
			if s.Tok != token.DEFINE {
				g.assignDrop(s)
			}
		case *ast.IncDecStmt:
			if g.isFieldTarget(s.X) {
				g.add(OpAssignDrop, 0, s.Pos(), s.Pos(), s.End(), "")
			}
		case *ast.ReturnStmt:
			if g.tail[s] {
				continue // removing it changes nothing, or leaves a function without its return
			}
			if g.sameNext[s] {
				continue // control would reach an identical return at once
			}
			if g.fnType.Results != nil && len(g.fnType.Results.List) > 0 && !terminatesList(g.fnBody.List, s) {
				continue // would not compile: missing return
			}
			g.add(OpReturnDrop, 0, s.Pos(), s.Pos(), s.End(), "")
		}
	}
}

// assignDrop removes the field writes of an assignment: x.f = v becomes
// _ = v, so v is still computed (its calls happen, its variables are
// used) but not stored; a, x.f = f() becomes a, _ = f(). An assignment of
// constants only is removed outright.
func (g *generator) assignDrop(s *ast.AssignStmt) {
	var lhs []string
	fields := 0
	for _, l := range s.Lhs {
		if g.isFieldTarget(l) {
			lhs = append(lhs, "_")
			fields++
		} else {
			lhs = append(lhs, g.text(l))
		}
	}
	if fields == 0 {
		return
	}
	if fields == len(s.Lhs) && allConstant(s.Rhs) {
		g.add(OpAssignDrop, 0, s.Pos(), s.Pos(), s.End(), "")
		return
	}
	rhs := make([]string, len(s.Rhs))
	for i, r := range s.Rhs {
		rhs[i] = g.text(r)
	}
	if s.Tok != token.ASSIGN { // x.f += d: only the field is written
		lhs = []string{"_"}
	}
	g.add(OpAssignDrop, 0, s.Pos(), s.Pos(), s.End(), strings.Join(lhs, ", ")+" = "+strings.Join(rhs, ", "))
}

// allConstant says whether every expression is a literal, nil, true or
// false: nothing to evaluate, and "_ = nil" would not compile.
func allConstant(es []ast.Expr) bool {
	for _, e := range es {
		switch e := e.(type) {
		case *ast.BasicLit:
		case *ast.Ident:
			if e.Name != "nil" && e.Name != "true" && e.Name != "false" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// isFieldTarget says whether an assignment's left-hand side writes a field
// (x.f, x.f[i], *x.f), not a local or a package's variable.
func (g *generator) isFieldTarget(e ast.Expr) bool {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.SelectorExpr:
			id, ok := x.X.(*ast.Ident)
			return !ok || !g.imports[id.Name]
		default:
			return false
		}
	}
}
