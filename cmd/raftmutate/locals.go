package main

import (
	"go/ast"
	"go/token"
)

// uses counts, in one declared function (its literals included), how often
// each name occurs, and which names the body declares as local variables.
// Removing an expression that holds a local's last use would not compile
// ("declared and not used"); the operators that remove expressions ask
// lastUse and keep the expression evaluated instead. Names, not objects:
// shadowing makes the answer approximate, which costs at worst a build
// error or a longer mutant.
type uses struct {
	count  map[string]int
	locals map[string]bool
}

func countUses(body *ast.BlockStmt) *uses {
	u := &uses{count: map[string]int{}, locals: map[string]bool{}}
	declare := func(es ...ast.Expr) {
		for _, e := range es {
			if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
				u.locals[id.Name] = true
			}
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				declare(n.Lhs...)
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				declare(n.Key, n.Value)
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				declare(id)
			}
		}
		return true
	})
	countIdents(body, u.count)
	return u
}

// countIdents adds the names occurring in n, selectors' field names
// excepted, to count.
func countIdents(n ast.Node, count map[string]int) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			countIdents(n.X, count)
			return false
		case *ast.Ident:
			count[n.Name]++
		}
		return true
	})
}

// lastUse says whether e holds every occurrence but one (the declaration)
// of some local variable.
func (u *uses) lastUse(e ast.Node) bool {
	if u == nil {
		return false
	}
	in := map[string]int{}
	countIdents(e, in)
	for name, k := range in {
		if u.locals[name] && u.count[name]-k <= 1 {
			return true
		}
	}
	return false
}
