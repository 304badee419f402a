package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// genConfig says which mutants to generate.
type genConfig struct {
	ops       OpSet
	files     []string        // base-name globs; empty = every file
	funcs     *regexp.Regexp  // enclosing function must match (nil = any)
	skipFuncs *regexp.Regexp  // enclosing function must not match (nil = none)
	asserts   map[string]bool // calls that are assertions: "name" or "pkg.name"
	skipCalls map[string]bool // calls whose arguments are not mutated, likewise
}

// Package is one package directory's mutants.
type Package struct {
	Dir     string // slash-separated, relative to the module root ("impl/wal")
	Mutants []Mutant
}

// generatePackage returns the mutants of the non-test, non-generated .go
// files of dir (a directory below root) that the build context includes,
// in file and position order.
func generatePackage(root, dir string, cfg *genConfig) (*Package, error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("package %s is not inside the module root %s", dir, root)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &Package{Dir: filepath.ToSlash(rel)}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, name); err != nil || !ok {
			continue
		}
		if !matchesAny(cfg.files, name) {
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("package %s: no Go source files selected", p.Dir)
	}
	sort.Strings(names)
	for _, name := range names {
		abs := filepath.Join(dir, name)
		src, err := os.ReadFile(abs)
		if err != nil {
			return nil, err
		}
		ms, err := generateFile(src, path.Join(p.Dir, name), cfg)
		if err != nil {
			return nil, err
		}
		for i := range ms {
			ms[i].Pkg = p.Dir
			ms[i].absFile = abs
		}
		p.Mutants = append(p.Mutants, ms...)
	}
	return p, nil
}

func matchesAny(globs []string, name string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

var generatedRE = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// generateFile returns the mutants of one file's source; relPath names it
// in ids. Only code inside function bodies is mutated.
func generateFile(src []byte, relPath string, cfg *genConfig) ([]Mutant, error) {
	if generatedRE.Match(src) {
		return nil, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, relPath, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	g := &generator{cfg: cfg, fset: fset, tf: fset.File(f.Pos()), src: src, rel: relPath,
		imports: importNames(f), inChain: map[*ast.BinaryExpr]bool{}}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := funcName(fd)
		if (cfg.funcs != nil && !cfg.funcs.MatchString(name)) || (cfg.skipFuncs != nil && cfg.skipFuncs.MatchString(name)) {
			continue
		}
		g.fn, g.uses = name, countUses(fd.Body)
		g.funcBody(fd.Type, fd.Body)
	}
	// Keep only mutants whose result parses (a safeguard: the edits are
	// designed to keep the syntax), and give each its description.
	out := g.out[:0]
	for _, m := range g.out {
		mut := m.Apply(src)
		if _, err := parser.ParseFile(token.NewFileSet(), relPath, mut, parser.SkipObjectResolution); err != nil {
			return nil, fmt.Errorf("internal error: mutant %s does not parse: %v", m.ID, err)
		}
		if bytes.Equal(mut, src) {
			continue
		}
		m.describe(src)
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		if a.Op != b.Op {
			return opIndex(a.Op) < opIndex(b.Op)
		}
		return a.K < b.K
	})
	return out, nil
}

func opIndex(op Operator) int {
	for i, o := range allOperators {
		if o == op {
			return i
		}
	}
	return len(allOperators)
}

// funcName is "Name" for a function and "Recv.Name" for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// importNames is the set of names a file's imports are referred to by.
func importNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, imp := range f.Imports {
		if imp.Name != nil {
			names[imp.Name.Name] = true
			continue
		}
		p := strings.Trim(imp.Path.Value, `"`)
		base := path.Base(p)
		if strings.HasPrefix(base, "v") && len(base) > 1 && strings.Trim(base[1:], "0123456789") == "" {
			base = path.Base(path.Dir(p)) // example.com/mod/v2
		}
		names[base] = true
	}
	return names
}
