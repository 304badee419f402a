package kv_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStoreIsPure: the package's code (tests aside) imports only the
// standard library packages below — no os, net, time, sync, math/rand,
// runtime, nothing of the project — and starts no goroutine. Its only I/O is
// the io.Writer and io.Reader that Snapshot and Restore are handed.
func TestStoreIsPure(t *testing.T) {
	allowed := map[string]bool{
		"bufio": true, "bytes": true, "container/heap": true, "encoding/binary": true,
		"errors": true, "fmt": true, "hash/crc32": true, "io": true, "maps": true, "math/bits": true, "slices": true,
		"strings": true, "unicode/utf8": true,
	}
	files, _ := filepath.Glob("*.go")
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[p] {
				t.Errorf("%s imports %q", path, p)
			}
		}
		src, _ := os.ReadFile(path)
		if strings.Contains(string(src), "go func") {
			t.Errorf("%s starts a goroutine", path)
		}
		checked++
	}
	if checked < 9 {
		t.Fatalf("checked only %d files", checked)
	}
}
