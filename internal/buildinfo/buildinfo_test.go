package buildinfo

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestFromDescribe(t *testing.T) {
	tests := []struct {
		describe, want string
	}{
		{"v1.2.3-0-g0123abcd", "1.2.3"},
		{"v1.2.3", "1.2.3"},
		{"1.2.3-0-g0123abcd", "1.2.3"},
		{"v1.2.3-5-g0123abcd", "1.2.4-dev.5"},
		{"v0.9.9-120-g0123abcdef12", "0.9.10-dev.120"},
		{"v2.0.0-rc.1-0-g0123abcd", "2.0.0-rc.1"},
		{"v2.0.0-rc.1-3-g0123abcd", "2.0.0-rc.1.dev.3"},
		{"v1.2.3-5-g0123abcd-dirty", "1.2.4-dev.5+dirty"},
		{"7-g0123abcd", "0.1.0-dev.7"},
		{"0-g0123abcd", "0.1.0-dev.0"},
		{"  v1.2.3-1-g0123abcd\n", "1.2.4-dev.1"},
		{"0123abcd", "0.1.0-dev"}, // describe --always with no tag: no count
		{"", "0.1.0-dev"},
		{"v1.2-4-g0123abcd", "0.1.0-dev"}, // not X.Y.Z
		{"vx.y.z-1-g0123abcd", "0.1.0-dev"},
	}
	for _, tt := range tests {
		t.Run(tt.describe, func(t *testing.T) {
			if got := FromDescribe(tt.describe); got != tt.want {
				t.Errorf("FromDescribe(%q) = %q, want %q", tt.describe, got, tt.want)
			}
		})
	}
}

func TestInfoLinkerValues(t *testing.T) {
	defer func(v, c, d string) { Version, Commit, Date = v, c, d }(Version, Commit, Date)
	Version, Commit, Date = "1.2.3", "0123abcdef12", "2026-12-01T10:00:00Z"
	got := Info()
	if got.Version != "1.2.3" || got.Commit != "0123abcdef12" || got.Date != "2026-12-01T10:00:00Z" || got.GoVersion != runtime.Version() {
		t.Errorf("Info() = %+v", got)
	}
	if s := got.String(); s != "1.2.3 (commit 0123abcdef12, 2026-12-01T10:00:00Z, "+runtime.Version()+")" {
		t.Errorf("String() = %q", s)
	}
}

// TestFromCheckout: with no stamp, the commit and its date come from the
// checkout the binary was built from, marked dirty when it has changes.
func TestFromCheckout(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "f")
	git(t, dir, "commit", "-q", "-m", "c", "--date", "2026-11-30T08:00:00+02:00")
	head, err := gitOut(dir, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	when, err := gitOut(dir, "log", "-1", "--format=%cI")
	if err != nil {
		t.Fatal(err)
	}
	at, _ := time.Parse(time.RFC3339, strings.TrimSpace(when))
	var bi BuildInfo
	fromCheckout(&bi, dir)
	if bi.Commit != strings.TrimSpace(head)[:12] || bi.Date != at.UTC().Format(time.RFC3339) {
		t.Errorf("clean checkout: %+v, want commit %.12s of %s", bi, head, at.UTC())
	}
	os.WriteFile(filepath.Join(dir, "f"), []byte("2"), 0o644)
	bi = BuildInfo{}
	fromCheckout(&bi, dir)
	if !strings.HasSuffix(bi.Commit, "-dirty") {
		t.Errorf("changed checkout: %+v, want a -dirty commit", bi)
	}
	bi = BuildInfo{}
	fromCheckout(&bi, t.TempDir())
	if bi != (BuildInfo{}) {
		t.Errorf("not a checkout: %+v, want nothing", bi)
	}
}

// TestGoRunKnowsItsCommit: `go run ./cmd/kl version` in this checkout
// reports its commit even when the toolchain stamps nothing
// (-buildvcs=false, as go run does).
func TestGoRunKnowsItsCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds kl")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root, _ := filepath.Abs("../..")
	head, err := gitOut(root, "rev-parse", "HEAD")
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	cmd := exec.Command("go", "run", "-buildvcs=false", "./cmd/kl", "version", "--json")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./cmd/kl version: %v\n%s", err, out)
	}
	var v struct {
		Client BuildInfo `json:"client"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.HasPrefix(v.Client.Commit, strings.TrimSpace(head)[:12]) || v.Client.Date == "" {
		t.Errorf("go run reports %+v, want commit %.12s and its date", v.Client, head)
	}
}

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name string
		info debug.BuildInfo
		want BuildInfo
	}{
		{"go install of a release", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, BuildInfo{Version: "1.4.0"}},
		{"checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"},
		}}, BuildInfo{Commit: "0123456789ab-dirty"}},
		{"go build -buildvcs=true", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "fedcba9876543210fedc"}, {Key: "vcs.time", Value: "2026-12-01T11:29:28Z"}, {Key: "vcs.modified", Value: "false"},
		}}, BuildInfo{Commit: "fedcba987654", Date: "2026-12-01T11:29:28Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got BuildInfo
			fromBuildInfo(&got, &tt.info)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestVersionScript runs scripts/version.sh in throwaway repositories and
// checks it agrees with FromDescribe: no tag, on a tag, after a tag, after
// a pre-release tag, and on a shallow clone.
func TestVersionScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	script, err := filepath.Abs("../../scripts/version.sh")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	newRepo := func(t *testing.T) string {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "scripts"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, "scripts", "version.sh"), src, 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "init", "-q")
		git(t, dir, "add", "scripts")
		git(t, dir, "commit", "-q", "-m", "script")
		return dir
	}
	commits := func(t *testing.T, dir string, n int) {
		for range n {
			git(t, dir, "commit", "-q", "--allow-empty", "-m", "c")
		}
	}

	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"no tag", func(t *testing.T, dir string) { commits(t, dir, 3) }, "0.1.0-dev.4"}, // the script commit and 3,
		{"on a tag", func(t *testing.T, dir string) {
			commits(t, dir, 1)
			git(t, dir, "tag", "v1.2.3")
		}, "1.2.3"},
		{"after a tag", func(t *testing.T, dir string) {
			commits(t, dir, 2)
			git(t, dir, "tag", "-a", "-m", "release", "v1.2.3")
			commits(t, dir, 4)
		}, "1.2.4-dev.4"},
		{"after a pre-release tag", func(t *testing.T, dir string) {
			commits(t, dir, 1)
			git(t, dir, "tag", "v2.0.0-rc.1")
			commits(t, dir, 2)
		}, "2.0.0-rc.1.dev.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t)
			tt.setup(t, dir)
			version, commit := runScript(t, dir)
			if version != tt.want {
				t.Errorf("version.sh version = %q, want %q", version, tt.want)
			}
			describe, err := gitOut(dir, "describe", "--tags", "--long")
			if err != nil {
				describe = gitCount(t, dir) + "-g" + commit
			}
			if fd := FromDescribe(describe); fd != version {
				t.Errorf("version.sh says %q but FromDescribe(%q) = %q", version, describe, fd)
			}
			if head, _ := gitOut(dir, "rev-parse", "--short=12", "HEAD"); commit != head {
				t.Errorf("version.sh commit = %q, want %q", commit, head)
			}
		})
	}

	t.Run("shallow clone", func(t *testing.T) {
		origin := newRepo(t)
		commits(t, origin, 2)
		git(t, origin, "tag", "v1.0.0")
		commits(t, origin, 5)
		clone := filepath.Join(t.TempDir(), "clone")
		git(t, origin, "clone", "-q", "--depth=1", "--no-tags", "file://"+origin, clone)
		version, _ := runScript(t, clone)
		if version != "0.1.0-dev.1" {
			t.Errorf("shallow clone: version = %q, want 0.1.0-dev.1 (no tag fetched, one commit)", version)
		}
	})
}

func runScript(t *testing.T, dir string) (version, commit string) {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join(dir, "scripts", "version.sh")).Output()
	if err != nil {
		t.Fatalf("version.sh: %v", err)
	}
	const pkg = "github.com/kilolock/kilolock/internal/buildinfo."
	for f := range strings.FieldsSeq(string(out)) {
		if v, ok := strings.CutPrefix(f, pkg+"Version="); ok {
			version = v
		}
		if c, ok := strings.CutPrefix(f, pkg+"Commit="); ok {
			commit = c
		}
	}
	if version == "" || commit == "" || !strings.HasPrefix(string(out), "-X "+pkg+"Version=") {
		t.Fatalf("version.sh printed %q, want -X %sVersion=… -X %sCommit=…", out, pkg, pkg)
	}
	return version, commit
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := gitOut(dir, args...); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func gitCount(t *testing.T, dir string) string {
	t.Helper()
	n, err := gitOut(dir, "rev-list", "--count", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return n
}
