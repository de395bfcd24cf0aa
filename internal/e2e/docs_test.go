package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// docBlock is one command block of the docs: a fenced block whose info
// string is sh or console.
type docBlock struct {
	file string // relative to the module root
	line int    // of the opening fence
	body string
	// skip is what a <!-- docs-test: skip KINDS: REASON --> line right
	// before the fence says the block needs that this test does not have:
	// the kinds (skipKinds), each checked against the block, and why.
	skip   string
	kinds  []string
	follow *docBlock // the block before in the same file
}

func (b docBlock) where() string { return b.file + ":" + strconv.Itoa(b.line) }

var skipMarker = regexp.MustCompile(`^<!-- docs-test: skip ([a-z,]+): (.+?) ?-->$`)

// skipKinds are what a block may need that the docs test cannot give it,
// each with what in the block shows the need: a block is marked not
// runnable only for a kind its text bears out, so a marker cannot hide a
// block that would run.
var skipKinds = map[string]*regexp.Regexp{
	// a server started in the foreground: kld, the examples that serve
	"foreground": regexp.MustCompile(`(?m)^\s*(\w+=\S+\s+)*(kld|bin/kld|go run \./cmd/kld|make run|go run \./examples/(embed|tenancy))\b([^\n#]*[^&\s#])?\s*(#[^\n]*)?$`),
	// a machine other than this one: a remote kld, PostgreSQL hosts
	"host": regexp.MustCompile(`\b[a-z0-9-]+\.example(\.com)?\b|@db[0-9]*[:/]|--hostname\b`),
	// system paths and services
	"system": regexp.MustCompile(`/etc/|/usr/local/|/var/lib/|\bsystemctl\b`),
	// containers and clusters
	"container": regexp.MustCompile(`\b(podman|docker|kubectl)\b|\bmake image\b`),
	// values the reader fills in from what a command before printed
	"placeholder": regexp.MustCompile(`[a-z]+_…`),
	// a transcript of another machine's run: prompts and its output
	"transcript": regexp.MustCompile(`(?m)^\$ `),
	// a demo, build or test run of minutes, often in several terminals
	"demo": regexp.MustCompile(`\bmake (demo|parallel|wait|test|build|tofu)|\bgo test\b`),
	// the server the block before it in the same file starts
	"follows": regexp.MustCompile(`127\.0\.0\.1:\d+`),
	// run by an end-to-end test the reason names (checked to exist)
	"covered": regexp.MustCompile(``),
}

// checkSkip fails t unless each kind b's marker gives is known and borne
// out: by the block's text, a named test that exists (covered), or a block
// before it that starts a server (follows).
func checkSkip(t *testing.T, root string, b docBlock) {
	t.Helper()
	for _, k := range b.kinds {
		re, ok := skipKinds[k]
		switch {
		case !ok:
			t.Errorf("%s: marked not runnable for %q, not a kind the docs test knows (%s)", b.where(), k, strings.Join(slices.Sorted(maps.Keys(skipKinds)), ", "))
		case k == "covered":
			name := regexp.MustCompile(`\bTest\w+`).FindString(b.skip)
			if name == "" || !testExists(t, root, name) {
				t.Errorf("%s: marked covered by a test, but its reason %q names no test that exists", b.where(), b.skip)
			}
		case k == "follows":
			if b.follow == nil || !slices.Contains(b.follow.kinds, "foreground") || !re.MatchString(b.body) {
				t.Errorf("%s: marked as needing the server the block before starts, but there is none", b.where())
			}
		case !re.MatchString(b.body):
			t.Errorf("%s: marked not runnable for %q, but the block shows no such need (%s):\n%s", b.where(), k, re, b.body)
		}
	}
}

// testExists reports whether a Go test named name is declared under root.
func testExists(t *testing.T, root, name string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || found {
			return err
		}
		if d.IsDir() && (d.Name() == ".cache" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			found = err == nil && bytes.Contains(b, []byte("func "+name+"("))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// docBlocks extracts every command block of README.md, docs/**/*.md and
// the examples' READMEs.
func docBlocks(t *testing.T, root string) []docBlock {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range examples {
		rel, _ := filepath.Rel(root, path)
		files = append(files, rel)
	}
	var blocks []docBlock
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		var (
			in, command bool
			cur         docBlock
			body        strings.Builder
			prev        string
			n           int
		)
		for sc.Scan() {
			n++
			line := sc.Text()
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "```") && !in:
				in = true
				info := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
				command = info == "sh" || info == "console"
				cur, body = docBlock{file: f, line: n}, strings.Builder{}
				if len(blocks) > 0 && blocks[len(blocks)-1].file == f {
					cur.follow = &blocks[len(blocks)-1]
				}
				if m := skipMarker.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
					cur.kinds, cur.skip = strings.Split(m[1], ","), m[2]
				} else if strings.HasPrefix(strings.TrimSpace(prev), "<!-- docs-test") {
					t.Errorf("%s:%d: %s: write <!-- docs-test: skip KINDS: REASON -->", f, n-1, prev)
				}
			case strings.HasPrefix(trimmed, "```") && in:
				in = false
				if command {
					cur.body = body.String()
					blocks = append(blocks, cur)
				}
			case in:
				body.WriteString(line + "\n")
			}
			if trimmed != "" {
				prev = trimmed
			}
		}
	}
	return blocks
}

// TestDocsCommandBlocks runs every command block of README.md and docs/ as
// written, with bash -e, against a real kld: each must exit 0. The blocks
// run in a directory that holds what a reader has at hand there: the
// repository's docs/, an initialized tofu configuration whose http backend
// is the state prod (three terraform_data resources, applied), its
// kilolock.db that kld serves at KL_SERVER, and kl, kld and tofu in PATH.
// A block that cannot run here is marked with <!-- docs-test: skip
// REASON --> right before its fence; the test lists them. A doc that
// drifts from kl's behaviour fails.
func TestDocsCommandBlocks(t *testing.T) {
	root := tofu.ModuleRoot(t)
	blocks := docBlocks(t, root)
	var run []docBlock
	for _, b := range blocks {
		if b.skip != "" {
			checkSkip(t, root, b)
			t.Logf("not run: %s: %s: %s", b.where(), strings.Join(b.kinds, ","), b.skip)
			continue
		}
		run = append(run, b)
	}
	t.Logf("%d command blocks: %d run, %d marked as not runnable here", len(blocks), len(run), len(blocks)-len(run))
	if len(run) < 8 {
		t.Errorf("only %d command blocks run: the docs test no longer tests the docs", len(run))
	}

	dbDir := t.TempDir()
	srv := tofu.StartKLD(t, filepath.Join(dbDir, "kilolock.db"))
	wd := tofu.NewWorkdir(t, srv.Backend("prod")+`
resource "terraform_data" "app" {
  count = 3
  input = "app-${count.index}"
}
`)
	wd.Must("init", "-no-color")
	wd.Must("apply", "-auto-approve", "-no-color")
	for _, link := range [][2]string{
		{filepath.Join(root, "docs"), filepath.Join(wd.Dir, "docs")},
		{filepath.Join(dbDir, "kilolock.db"), filepath.Join(wd.Dir, "kilolock.db")},
	} {
		if err := os.Symlink(link[0], link[1]); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	for name, path := range map[string]string{"kl": tofu.BuildKL(t), "kld": tofu.BuildKLD(t), "tofu": tofu.Binary(t)} {
		if err := os.Symlink(path, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := setEnv(wd.Env(), []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "KL_SERVER=" + srv.URL, "HOME=" + t.TempDir()})
	env = withoutPrefix(env, "KL_DATABASE_URL", "KL_TOKEN")

	for _, b := range run {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", b.body)
		cmd.Dir, cmd.Env = wd.Dir, env
		// The block runs in a group of its own, ended with it: a server
		// it starts in the background (kld … &) neither outlives it nor,
		// holding the output open, keeps the test waiting.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		if cmd.Process != nil {
			cmd.Cancel() // what the block left in the background
		}
		cancel()
		if err != nil {
			t.Errorf("%s: the block fails as written: %v\n%s\n--- output:\n%s", b.where(), err, b.body, out)
		} else {
			t.Logf("%s: ok", b.where())
		}
	}
}

// withoutPrefix drops the variables named by prefixes from env.
func withoutPrefix(env []string, prefixes ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
