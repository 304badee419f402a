package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// raftdBin and raftctlBin are the binaries built once for the package's
// tests.
var raftdBin, raftctlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "raftd-proc-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	raftdBin, raftctlBin = filepath.Join(dir, "raftd"), filepath.Join(dir, "raftctl")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(gobin, "build", "-o", dir, "github.com/durableraft/durableraft/cmd/raftd", "github.com/durableraft/durableraft/cmd/raftctl")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building raftd and raftctl:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
