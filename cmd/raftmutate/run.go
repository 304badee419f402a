package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Status is what running the judge on a mutant showed.
type Status string

const (
	Killed     Status = "killed"      // the judge failed
	Survived   Status = "survived"    // the judge passed
	TimedOut   Status = "timeout"     // the judge ran past the timeout (counted as killed)
	BuildError Status = "build-error" // the mutant does not compile (not counted)
)

// An Outcome is one mutant's result.
type Outcome struct {
	Mutant
	Status     Status   `json:"status"`
	By         string   `json:"by,omitempty"`          // what killed it
	Tail       []string `json:"tail,omitempty"`        // the judge's last lines
	Seconds    float64  `json:"seconds"`               // build check and judge
	Equivalent string   `json:"equivalent,omitempty"`  // the argument, when declared equivalent
	Tests      int      `json:"tests,omitempty"`       // -tests: the covering tests run (at most)
	NotCovered bool     `json:"not_covered,omitempty"` // -tests: no test ran its block; survived unrun
}

// runner runs the judge on mutants.
type runner struct {
	root       string // module root: the commands' working directory
	judge      string // shell command; {pkg} is replaced by ./<package dir>
	timeout    time.Duration
	tail       int
	buildCheck bool
	tmp        string
	goFlags    string // GOFLAGS of the environment, kept
	log        io.Writer

	// -tests: the judge is the covering tests (cover.go).
	modPath      string
	cover        *coverSet
	fixedTimeout bool           // -timeout given: it bounds each test run
	skipTests    *regexp.Regexp // -skip-tests, on DIR.TestName
	stopAt       time.Time      // -stop-after: no mutant is started after it

	srcMu sync.Mutex
	src   map[string][]byte
}

func (r *runner) judgeFor(pkg string) string {
	return strings.ReplaceAll(r.judge, "{pkg}", "./"+pkg)
}

// result of one command.
type cmdResult struct {
	out      judgeOutput
	exit     int
	timedOut bool
	elapsed  time.Duration
}

// command runs argv in the module root with extra environment, under the
// timeout (0 = none), and kills its whole process group when it expires.
func (r *runner) command(env []string, timeout time.Duration, argv ...string) (*cmdResult, error) {
	return r.commandIn(r.root, env, timeout, argv...)
}

// commandIn is command with another working directory.
func (r *runner) commandIn(dir string, env []string, timeout time.Duration, argv ...string) (*cmdResult, error) {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	res := &cmdResult{}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = &res.out
	cmd.Stderr = &res.out
	cmd.WaitDelay = 10 * time.Second
	ownProcessGroup(cmd)
	start := time.Now()
	err := cmd.Run()
	res.elapsed = time.Since(start)
	res.out.flush()
	var exit *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.timedOut = true
	case errors.As(err, &exit):
		res.exit = exit.ExitCode()
	case err != nil:
		return nil, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return res, nil
}

// goFlagsEnv is GOFLAGS for a run with the overlay (none when ""): vet is
// off, since a mutant vet dislikes is not a test's catch.
func (r *runner) goFlagsEnv(overlay string) string {
	flags := strings.TrimSpace(r.goFlags + " -vet=off")
	if overlay != "" {
		flags += " -overlay=" + overlay
	}
	return "GOFLAGS=" + flags
}

// baseline runs the judge on the unchanged package; it must pass.
func (r *runner) baseline(pkg string) (time.Duration, error) {
	scratch := filepath.Join(r.tmp, "baseline")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return 0, err
	}
	defer os.RemoveAll(scratch)
	env := []string{r.goFlagsEnv(""), "RAFTMUTATE_ID=baseline", "RAFTMUTATE_DIR=" + scratch, "RAFTMUTATE_OVERLAY="}
	res, err := r.command(env, 0, "sh", "-c", r.judgeFor(pkg))
	if err != nil {
		return 0, err
	}
	if res.exit != 0 {
		return 0, fmt.Errorf("the judge fails on the unchanged package %s (exit status %d; fix that first):\n  %s",
			pkg, res.exit, strings.Join(res.out.lines(r.tail+10), "\n  "))
	}
	return res.elapsed, nil
}

func (r *runner) source(path string) ([]byte, error) {
	r.srcMu.Lock()
	defer r.srcMu.Unlock()
	if b, ok := r.src[path]; ok {
		return b, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if r.src == nil {
		r.src = map[string][]byte{}
	}
	r.src[path] = b
	return b, nil
}

// run judges one mutant, using worker w's scratch directory.
func (r *runner) run(m *Mutant, w int) (Outcome, error) {
	o := Outcome{Mutant: *m}
	dir := filepath.Join(r.tmp, fmt.Sprintf("worker%d", w))
	scratch := filepath.Join(dir, "scratch")
	if err := os.RemoveAll(dir); err != nil {
		return o, err
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return o, err
	}
	src, err := r.source(m.absFile)
	if err != nil {
		return o, err
	}
	mutFile := filepath.Join(dir, filepath.Base(m.absFile))
	if err := os.WriteFile(mutFile, m.Apply(src), 0o644); err != nil {
		return o, err
	}
	overlay := filepath.Join(dir, "overlay.json")
	js, _ := json.Marshal(map[string]map[string]string{"Replace": {m.absFile: mutFile}})
	if err := os.WriteFile(overlay, js, 0o644); err != nil {
		return o, err
	}
	start := time.Now()
	if r.cover != nil {
		err := r.runSelected(m, &o, dir, scratch, overlay)
		o.Seconds = time.Since(start).Seconds()
		return o, err
	}
	if r.buildCheck {
		res, err := r.command(nil, r.timeout, "go", "build", "-o", os.DevNull, "-overlay="+overlay, "./"+m.Pkg)
		if err != nil {
			return o, err
		}
		if res.timedOut || res.exit != 0 {
			o.Status, o.Tail, o.Seconds = BuildError, res.out.lines(r.tail), time.Since(start).Seconds()
			return o, nil
		}
	}
	env := []string{r.goFlagsEnv(overlay), "RAFTMUTATE_ID=" + m.ID, "RAFTMUTATE_DIR=" + scratch, "RAFTMUTATE_OVERLAY=" + overlay}
	res, err := r.command(env, r.timeout, "sh", "-c", r.judgeFor(m.Pkg))
	if err != nil {
		return o, err
	}
	o.Seconds = time.Since(start).Seconds()
	switch {
	case res.timedOut:
		o.Status, o.By = TimedOut, fmt.Sprintf("timeout after %v", r.timeout.Round(time.Second))
	case res.exit == 0:
		o.Status = Survived
	case res.out.buildFailed:
		o.Status = BuildError
	default:
		o.Status, o.By = Killed, res.out.killedBy(res.exit)
	}
	if o.Status != Survived {
		o.Tail = res.out.lines(r.tail)
	}
	return o, nil
}

// runAll judges the mutants with the given number of workers, reporting
// each outcome as it arrives; outcomes are returned in the mutants' order.
func (r *runner) runAll(ms []Mutant, workers int) ([]Outcome, error) {
	out := make([]Outcome, len(ms))
	jobs := make(chan int)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		done    int
		firstEr error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range jobs {
				o, err := r.run(&ms[i], w)
				mu.Lock()
				if err != nil && firstEr == nil {
					firstEr = fmt.Errorf("mutant %s: %w", ms[i].ID, err)
				}
				out[i] = o
				done++
				fmt.Fprintf(r.log, "raftmutate: [%d/%d] %s %s %.1fs%s\n", done, len(ms), o.ID, o.Status, o.Seconds, byNote(&o))
				mu.Unlock()
			}
		}(w)
	}
	started := 0
	for i := range ms {
		mu.Lock()
		stop := firstEr != nil
		mu.Unlock()
		if stop || (!r.stopAt.IsZero() && time.Now().After(r.stopAt)) {
			break
		}
		jobs <- i
		started++
	}
	close(jobs)
	wg.Wait()
	return out[:started], firstEr
}

func byNote(o *Outcome) string {
	switch {
	case o.By != "":
		return " (" + o.By + ")"
	case o.NotCovered:
		return " (not covered): " + o.Diff()
	case o.Status == Survived:
		return ": " + o.Diff()
	}
	return ""
}
