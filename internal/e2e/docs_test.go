package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
	// skip is the reason given by a <!-- docs-test: skip REASON --> line
	// right before the fence; "" runs the block.
	skip string
}

func (b docBlock) where() string { return b.file + ":" + strconv.Itoa(b.line) }

var skipMarker = regexp.MustCompile(`^<!-- docs-test: skip (.*?) ?-->$`)

// docBlocks extracts every command block of README.md and docs/**/*.md.
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
				if m := skipMarker.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
					cur.skip = m[1]
					if cur.skip == "" {
						t.Errorf("%s:%d: a skip marker without a reason", f, n-1)
					}
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
			t.Logf("not run: %s: %s", b.where(), b.skip)
			continue
		}
		run = append(run, b)
	}
	t.Logf("%d command blocks: %d run, %d marked as not runnable here", len(blocks), len(run), len(blocks)-len(run))
	if len(run) < 6 {
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
		out, err := cmd.CombinedOutput()
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
