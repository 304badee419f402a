package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/internal/cdp"
)

var courseShots = flag.String("screenshots", "", "after running the course's commands, screenshot each page its pictures name into this directory (make screenshots: docs/img)")

// courseCommand is one command of a ```sh block of docs/course.md.
type courseCommand struct {
	line int
	text string
	exit int // the exit status it must have: "# exit N" at its end, else 0
}

func courseCommands(t *testing.T, path string) []courseCommand {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []courseCommand
	in := false
	exitRe := regexp.MustCompile(`#\s*exit (\d+)\s*$`)
	sc := bufio.NewScanner(f)
	for no := 1; sc.Scan(); no++ {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "```sh"):
			in = true
		case strings.HasPrefix(l, "```"):
			in = false
		case in && strings.TrimSpace(l) != "":
			c := courseCommand{line: no, text: l}
			if m := exitRe.FindStringSubmatch(l); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
			}
			out = append(out, c)
		}
	}
	if len(out) < 10 {
		t.Fatalf("%s: %d commands", path, len(out))
	}
	return out
}

func tlcAvailable() (bool, string) {
	if _, err := exec.LookPath("java"); err != nil {
		return false, "no java on PATH"
	}
	jar := os.Getenv("TLA2TOOLS_JAR")
	if jar == "" {
		home, _ := os.UserHomeDir()
		jar = filepath.Join(home, ".cache/tla/tla2tools.jar")
	}
	if _, err := os.Stat(jar); err != nil {
		return false, "no tla2tools.jar"
	}
	return true, ""
}

// TestCourseCommands runs every command docs/course.md shows, in order,
// from the repository root with freshly built binaries, and checks each
// one's exit status; TLC's are skipped (one line) without TLC, and
// raftspec serve is started, asked for its model, and stopped. With
// -screenshots it then draws the course's pictures.
func TestCourseCommands(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("-short or -race: the course's commands are not run (they run in make test's plain pass)")
	}
	root, _ := filepath.Abs("../..")
	bin := t.TempDir()
	// The course writes under /tmp/course and the demo listens on ports
	// 7701-7703 and 7801-7803; a test runs beside others, so it takes a
	// directory and ports of its own.
	work := t.TempDir()
	port := freePorts(t)
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/raftspec", "./cmd/raftctl", "./cmd/raftd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tlc, why := tlcAvailable()
	for _, c := range courseCommands(t, filepath.Join(root, "docs/course.md")) {
		cmd := strings.NewReplacer("bin/raftspec", bin+"/raftspec", "bin/raftctl", bin+"/raftctl", "bin/raftd", bin+"/raftd",
			"/tmp/course", work, "--port 7701", fmt.Sprintf("--port %d", port)).Replace(c.text)
		switch {
		case strings.HasPrefix(c.text, "tla/tlc.sh") && !tlc:
			t.Logf("course.md:%d: TLC skipped (%s): %s", c.line, why, c.text)
			continue
		case strings.HasPrefix(c.text, "bin/raftspec serve"):
			serveOnce(t, c, cmd, root)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		x := exec.CommandContext(ctx, "bash", "-c", cmd)
		x.Dir = root
		out, err := x.CombinedOutput()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("course.md:%d: %v", c.line, err)
		}
		if code != c.exit {
			t.Fatalf("course.md:%d: exit %d, want %d: %s\n%s", c.line, code, c.exit, c.text, tail(out))
		}
	}
	if *courseShots != "" {
		coursePictures(t, filepath.Join(root, "docs/course.md"), work, *courseShots)
	}
}

// freePorts returns a base port p such that p..p+2 and p+100..p+102 (the
// demo's client and peer ports) are free on 127.0.0.1 now.
func freePorts(t *testing.T) int {
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if base+102 > 65535 {
			continue
		}
		free := true
		for _, p := range []int{base, base + 1, base + 2, base + 100, base + 101, base + 102} {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free ports for the demo")
	return 0
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// serveOnce starts raftspec serve as the course shows it (on a free
// loopback port), asks it for its model and stops it.
func serveOnce(t *testing.T, c courseCommand, cmd, root string) {
	t.Helper()
	x := exec.Command("bash", "-c", "exec "+cmd+" -addr 127.0.0.1:0")
	x.Dir = root
	stdout, err := x.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { x.Process.Kill(); x.Wait() }()
	sc := bufio.NewScanner(stdout)
	url := ""
	for sc.Scan() {
		if _, u, ok := strings.Cut(sc.Text(), "the explorer is at "); ok {
			url = strings.Fields(u)[0]
			break
		}
	}
	if url == "" {
		t.Fatalf("course.md:%d: raftspec serve printed no address", c.line)
	}
	r, err := http.Get(url + "api/model")
	if err != nil {
		t.Fatalf("course.md:%d: %v", c.line, err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("course.md:%d: GET /api/model: %d", c.line, r.StatusCode)
	}
}

// Every picture docs/course.md shows is in docs/img, and small.
func TestCoursePicturesExist(t *testing.T) {
	b, err := os.ReadFile("../../docs/course.md")
	if err != nil {
		t.Fatal(err)
	}
	pics := regexp.MustCompile(`!\[[^\]]*\]\((img/[\w.-]+\.png)\)`).FindAllStringSubmatch(string(b), -1)
	if len(pics) < 8 {
		t.Fatalf("%d pictures in the course", len(pics))
	}
	for _, p := range pics {
		st, err := os.Stat(filepath.Join("../../docs", p[1]))
		if err != nil {
			t.Errorf("docs/course.md shows %s: %v (make screenshots)", p[1], err)
			continue
		}
		if st.Size() > 400<<10 {
			t.Errorf("%s is %d KB: keep the pictures small", p[1], st.Size()>>10)
		}
	}
	readme, _ := os.ReadFile("../../docs/README.md")
	if !strings.Contains(string(readme), "(course.md)") {
		t.Error("docs/README.md does not link the course")
	}
}

// coursePictures screenshots /tmp/course/NAME.html for each img/NAME.png
// the course shows (the others come from viz's browser tests), at the
// event that matters: the one the spec rejects, else the last violation,
// else just after the first crash.
func coursePictures(t *testing.T, course, work, dir string) {
	path, ok := cdp.Find()
	if !ok {
		t.Skip("no chromium: no screenshots")
	}
	b, _ := os.ReadFile(course)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	br, err := cdp.Start(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	for _, p := range regexp.MustCompile(`\(img/([\w.-]+)\.png\)`).FindAllStringSubmatch(string(b), -1) {
		page := filepath.Join(work, p[1]+".html")
		if _, err := os.Stat(page); err != nil {
			continue
		}
		tab, err := br.NewPage(ctx, 1280, 800)
		if err != nil {
			t.Fatal(err)
		}
		if err := tab.Navigate(ctx, "file://"+page); err != nil {
			t.Fatal(err)
		}
		js := `(() => { const D = viz.data; let k = -1;
			if (D.check && !D.check.ok && D.check.event >= 0) k = D.check.event;
			else if (D.inv && D.inv.first && D.inv.first.length) k = Math.max(...D.inv.first.map(v => v.event));
			else k = D.events.findIndex(e => D.actions[e.a] === 'Crash') + 3; // a run without a violation: its first crash
			if (k >= 0) viz.go(k); return k; })()`
		if err := tab.Eval(ctx, js, nil); err != nil {
			t.Fatal(err)
		}
		png, err := tab.Screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, p[1]+".png")
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		if q, err := exec.LookPath("pngquant"); err == nil {
			exec.Command(q, "--force", "--skip-if-larger", "--output", out, "--", out).Run()
		}
		t.Log(fmt.Sprintf("wrote %s", out))
	}
}
