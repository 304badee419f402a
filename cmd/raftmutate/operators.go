package main

import (
	"fmt"
	"strings"
)

// An Operator is one kind of single-change mutation.
type Operator string

// The operators, in the order reports list them. The first five are the
// issue's operators for spec/ (guards, comparisons, clamps); the last four
// are added for impl/ code.
const (
	OpAndDrop    Operator = "and-drop"    // remove one conjunct of a && chain (condition, guard, predicate)
	OpOrDrop     Operator = "or-drop"     // remove one disjunct of a || chain
	OpCmpFlip    Operator = "cmp-flip"    // < <-> <=, > <-> >=
	OpEqFlip     Operator = "eq-flip"     // == <-> !=
	OpMinMaxDrop Operator = "minmax-drop" // min(a, b) -> a, -> b (builtin or a Min/Max helper)
	OpIfNegate   Operator = "if-negate"   // if c -> if !(c)
	OpAssignDrop Operator = "assign-drop" // x.f = v -> _ = v (x.f op= v, x.f++ likewise)
	OpReturnDrop Operator = "return-drop" // remove a return that is not in tail position
	OpOffByOne   Operator = "off-by-one"  // x + 1 -> x, -> x + 2 (and the same for - 1)
)

// allOperators lists every operator in report order.
var allOperators = []Operator{OpAndDrop, OpOrDrop, OpCmpFlip, OpEqFlip, OpMinMaxDrop,
	OpIfNegate, OpAssignDrop, OpReturnDrop, OpOffByOne}

// operatorGroups are the names -ops accepts besides single operators.
var operatorGroups = map[string][]Operator{
	"spec": allOperators[:5],
	"impl": allOperators,
	"all":  allOperators,
}

// OpSet is a set of selected operators.
type OpSet map[Operator]bool

// parseOps parses -ops: comma-separated operator or group names.
func parseOps(s string) (OpSet, error) {
	set := OpSet{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if g, ok := operatorGroups[name]; ok {
			for _, op := range g {
				set[op] = true
			}
			continue
		}
		if !validOp(Operator(name)) {
			return nil, fmt.Errorf("unknown operator %q (operators: %s; groups: spec, impl, all)", name, opNames(allOperators))
		}
		set[Operator(name)] = true
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("no operator selected")
	}
	return set, nil
}

func validOp(op Operator) bool {
	for _, o := range allOperators {
		if o == op {
			return true
		}
	}
	return false
}

func opNames(ops []Operator) string {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = string(op)
	}
	return strings.Join(names, ", ")
}

// String lists the set in report order.
func (s OpSet) String() string {
	var ops []Operator
	for _, op := range allOperators {
		if s[op] {
			ops = append(ops, op)
		}
	}
	return opNames(ops)
}
