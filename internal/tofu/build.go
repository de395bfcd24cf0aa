package tofu

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDirP string // holds kld and kl
	buildErr  error
)

// BuildKLD returns the path of a kld built from this checkout. The first
// call of BuildKLD or BuildKL in a test binary builds both commands.
func BuildKLD(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(buildCommands(tb), "kld")
}

// BuildKL returns the path of a kl built from this checkout. The first call
// of BuildKLD or BuildKL in a test binary builds both commands.
func BuildKL(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(buildCommands(tb), "kl")
}

func buildCommands(tb testing.TB) string {
	tb.Helper()
	rootDir := ModuleRoot(tb)
	buildOnce.Do(func() {
		noteSources(rootDir)
		start := time.Now()
		buildDirP, buildErr = goBuild(rootDir)
		if buildErr == nil {
			tb.Logf("built kld and kl into %s in %s", buildDirP, time.Since(start).Round(time.Millisecond))
		}
	})
	if buildErr != nil {
		tb.Fatalf("tofu: %v", buildErr)
	}
	return buildDirP
}

// goBuild builds ./cmd/kld and ./cmd/kl with the ldflags of
// scripts/version.sh into .cache/kltest/<pid>/, removing the builds of
// earlier test binaries that have ended: a test binary has no hook that
// runs after testpg.Main exits, and the go build cache does not keep linked
// programs.
func goBuild(rootDir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ldflags, err := versionLDFlags(ctx, rootDir)
	if err != nil {
		return "", err
	}
	dir, err := buildDir(rootDir)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-ldflags", ldflags, "-o", dir+string(filepath.Separator), "./cmd/kld", "./cmd/kl")
	cmd.Dir = rootDir
	cmd.Env = CleanEnv("GOOS=", "GOARCH=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kld ./cmd/kl: %w\n%s", err, msg)
	}
	return dir, nil
}

// versionLDFlags returns what scripts/version.sh prints: the -X flags that
// stamp internal/buildinfo, as `make build` passes them.
func versionLDFlags(ctx context.Context, rootDir string) (string, error) {
	script := filepath.Join(rootDir, "scripts", "version.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = rootDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/version.sh: %w\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// buildDir returns a new .cache/kltest/<pid> and removes the directories of
// processes that no longer run.
func buildDir(rootDir string) (string, error) {
	base := filepath.Join(rootDir, ".cache", "kltest")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	old, _ := filepath.Glob(filepath.Join(base, "*"))
	for _, d := range old {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), "%d", &pid); err == nil && !processAlive(pid) {
			os.RemoveAll(d)
		}
	}
	dir := filepath.Join(base, fmt.Sprint(os.Getpid()))
	return dir, os.MkdirAll(dir, 0o755)
}

// noteSources opens the module's Go files, go.mod, go.sum and
// scripts/version.sh. go test caches a test's result keyed by the files the
// test process opened; kld and kl are built in a subprocess, so without
// this a cached end-to-end result would outlive a change to the server.
func noteSources(rootDir string) {
	for _, name := range []string{"go.mod", "go.sum", filepath.Join("scripts", "version.sh")} {
		touch(filepath.Join(rootDir, name))
	}
	filepath.WalkDir(rootDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if path != rootDir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			touch(path)
		}
		return nil
	})
}

func touch(path string) {
	if f, err := os.Open(path); err == nil {
		f.Close()
	}
}
