package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// EquivalentsMax is the largest share of a package's mutants that may be
// declared equivalent (issue 20).
const EquivalentsMax = 0.05

// readEquivalents parses an equivalents file: one declaration a line,
// "ID ARGUMENT", where ARGUMENT says in words why the mutant cannot change
// what the package does; '#' starts a comment line.
func readEquivalents(r io.Reader, name string) (map[string]string, error) {
	eq := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, arg, _ := strings.Cut(line, " ")
		arg = strings.TrimSpace(arg)
		if strings.Count(id, ":") != 4 {
			return nil, fmt.Errorf("%s:%d: %q is not a mutant id (file:line:col:operator:k)", name, n, id)
		}
		if arg == "" {
			return nil, fmt.Errorf("%s:%d: %s is declared equivalent without an argument", name, n, id)
		}
		if _, dup := eq[id]; dup {
			return nil, fmt.Errorf("%s:%d: %s is declared twice", name, n, id)
		}
		eq[id] = arg
	}
	return eq, sc.Err()
}

func loadEquivalents(path string) (map[string]string, error) {
	if path == "" {
		return map[string]string{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readEquivalents(f, path)
}

// checkEquivalents refuses more than EquivalentsMax of a package's
// mutants declared equivalent, and returns the declarations that name no
// mutant of the selected packages (stale: the source moved, or the
// operator is not selected).
func checkEquivalents(pkgs []*Package, eq map[string]string) (stale []string, err error) {
	known := map[string]bool{}
	for _, p := range pkgs {
		declared := 0
		for _, m := range p.Mutants {
			known[m.ID] = true
			if _, ok := eq[m.ID]; ok {
				declared++
			}
		}
		if float64(declared) > EquivalentsMax*float64(len(p.Mutants)) {
			return nil, fmt.Errorf("package %s: %d of %d mutants declared equivalent, more than %.0f%%: kill some with a test instead",
				p.Dir, declared, len(p.Mutants), 100*EquivalentsMax)
		}
	}
	for id := range eq {
		if !known[id] && inPackages(id, pkgs) {
			stale = append(stale, id)
		}
	}
	sort.Strings(stale)
	return stale, nil
}

// inPackages says whether id names a file of one of pkgs.
func inPackages(id string, pkgs []*Package) bool {
	file, _, _ := strings.Cut(id, ":")
	for _, p := range pkgs {
		if strings.HasPrefix(file, p.Dir+"/") && !strings.Contains(file[len(p.Dir)+1:], "/") {
			return true
		}
	}
	return false
}

// sample picks n of ms, deterministically for a seed: the n whose hash of
// (seed, id) is smallest, returned in ms's order. A mutant's membership
// depends only on its own id, so adding or removing code elsewhere leaves
// the rest of a sample as it was.
func sample(ms []Mutant, n int, seed uint64) []Mutant {
	if n <= 0 || n >= len(ms) {
		return ms
	}
	out := ranked(ms, seed)[:n]
	sort.Slice(out, func(a, b int) bool { return out[a].index < out[b].index })
	return out
}

// ranked returns ms in the order of the hash of (seed, id): its first n are
// sample(ms, n, seed), so a run in this order that stops after k mutants
// has judged exactly the sample of k.
func ranked(ms []Mutant, seed uint64) []Mutant {
	type keyed struct {
		h uint64
		i int
	}
	ks := make([]keyed, len(ms))
	for i := range ms {
		// A cryptographic hash: ids differ in a character or two, and the
		// sample must not favour neighbours (FNV did: it took all the
		// alternatives of one node).
		b := make([]byte, 8, 8+len(ms[i].ID))
		binary.LittleEndian.PutUint64(b, seed)
		sum := sha256.Sum256(append(b, ms[i].ID...))
		ks[i] = keyed{binary.LittleEndian.Uint64(sum[:8]), i}
	}
	sort.Slice(ks, func(a, b int) bool { return ks[a].h < ks[b].h || ks[a].h == ks[b].h && ks[a].i < ks[b].i })
	out := make([]Mutant, len(ms))
	for k, x := range ks {
		out[k] = ms[x.i]
		out[k].index = x.i
	}
	return out
}

// parseOnly reads -only: comma-separated ids, or @FILE with one id a line
// (the first field; '#' comments), as -list and the report print them.
func parseOnly(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var ids []string
	if strings.HasPrefix(s, "@") {
		b, err := os.ReadFile(s[1:])
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
				ids = append(ids, f[0])
			}
		}
		return ids, nil
	}
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// only keeps the mutants named by ids; an id that names none is an error.
func only(ms []Mutant, ids []string) ([]Mutant, []string) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []Mutant
	for _, m := range ms {
		if want[m.ID] {
			out = append(out, m)
			delete(want, m.ID)
		}
	}
	var missing []string
	for _, id := range ids {
		if want[id] {
			missing = append(missing, id)
			delete(want, id)
		}
	}
	return out, missing
}
