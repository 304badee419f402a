package main

import (
	"go/ast"
	"go/token"
)

// markTailList marks the statements of a function body in tail position:
// those after which control leaves the function anyway (the last statement,
// and the last statements of the branches of a last if, switch or select).
// Removing a return there is a no-op or a missing return.
func markTailList(list []ast.Stmt, tail map[ast.Stmt]bool) {
	if len(list) > 0 {
		markTail(list[len(list)-1], tail)
	}
}

func markTail(s ast.Stmt, tail map[ast.Stmt]bool) {
	tail[s] = true
	switch s := s.(type) {
	case *ast.BlockStmt:
		markTailList(s.List, tail)
	case *ast.IfStmt:
		markTailList(s.Body.List, tail)
		if s.Else != nil {
			markTail(s.Else, tail)
		}
	case *ast.SwitchStmt:
		for _, c := range s.Body.List {
			markTailList(c.(*ast.CaseClause).Body, tail)
		}
	case *ast.TypeSwitchStmt:
		for _, c := range s.Body.List {
			markTailList(c.(*ast.CaseClause).Body, tail)
		}
	case *ast.SelectStmt:
		for _, c := range s.Body.List {
			markTailList(c.(*ast.CommClause).Body, tail)
		}
	case *ast.LabeledStmt:
		markTail(s.Stmt, tail)
	}
}

// terminatesList says whether a statement list, with the statement removed
// taken out, ends in a terminating statement (the Go specification's rule,
// which decides "missing return").
func terminatesList(list []ast.Stmt, removed ast.Stmt) bool {
	for i := len(list) - 1; i >= 0; i-- {
		s := list[i]
		if s == removed {
			continue
		}
		if _, ok := s.(*ast.EmptyStmt); ok {
			continue
		}
		return terminates(s, removed)
	}
	return false
}

func terminates(s ast.Stmt, removed ast.Stmt) bool {
	switch s := s.(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.BranchStmt:
		return s.Tok == token.GOTO
	case *ast.ExprStmt:
		c, ok := s.X.(*ast.CallExpr)
		if !ok {
			return false
		}
		id, ok := c.Fun.(*ast.Ident)
		return ok && id.Name == "panic"
	case *ast.BlockStmt:
		return terminatesList(s.List, removed)
	case *ast.IfStmt:
		return s.Else != nil && terminatesList(s.Body.List, removed) && terminates(s.Else, removed)
	case *ast.ForStmt:
		return s.Cond == nil && !hasBreak(s.Body)
	case *ast.SwitchStmt:
		return clausesTerminate(s.Body, removed)
	case *ast.TypeSwitchStmt:
		return clausesTerminate(s.Body, removed)
	case *ast.SelectStmt:
		if hasBreak(s.Body) {
			return false
		}
		for _, c := range s.Body.List {
			if !terminatesList(c.(*ast.CommClause).Body, removed) {
				return false
			}
		}
		return true
	case *ast.LabeledStmt:
		return terminates(s.Stmt, removed)
	}
	return false
}

func clausesTerminate(body *ast.BlockStmt, removed ast.Stmt) bool {
	if hasBreak(body) {
		return false
	}
	hasDefault := false
	for _, c := range body.List {
		cc := c.(*ast.CaseClause)
		if cc.List == nil {
			hasDefault = true
		}
		if n := len(cc.Body); n > 0 {
			if b, ok := cc.Body[n-1].(*ast.BranchStmt); ok && b.Tok == token.FALLTHROUGH {
				continue
			}
		}
		if !terminatesList(cc.Body, removed) {
			return false
		}
	}
	return hasDefault
}

// hasBreak says whether body has a break that may leave the statement it
// belongs to: an unlabeled break not inside a nested loop, switch or
// select, or any labeled break (conservatively).
func hasBreak(body ast.Node) bool {
	found := false
	var visit func(n ast.Node, nested bool)
	visit = func(n ast.Node, nested bool) {
		ast.Inspect(n, func(m ast.Node) bool {
			if found || m == nil {
				return false
			}
			switch m := m.(type) {
			case *ast.FuncLit:
				return false
			case *ast.BranchStmt:
				if m.Tok == token.BREAK && (m.Label != nil || !nested) {
					found = true
				}
			case *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
				if m != body {
					for _, child := range childBlocks(m) {
						visit(child, true)
					}
					return false
				}
			}
			return true
		})
	}
	visit(body, false)
	return found
}

func childBlocks(n ast.Node) []ast.Node {
	switch n := n.(type) {
	case *ast.ForStmt:
		return []ast.Node{n.Body}
	case *ast.RangeStmt:
		return []ast.Node{n.Body}
	case *ast.SwitchStmt:
		return []ast.Node{n.Body}
	case *ast.TypeSwitchStmt:
		return []ast.Node{n.Body}
	case *ast.SelectStmt:
		return []ast.Node{n.Body}
	}
	return nil
}
