package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestParallelDemoTofu: make parallel-demo builds OpenTofu (make tofu, a
// long build) only when no CLI is at hand: not when TOFU names one or tofu
// is in PATH; and the demo runs with the CLI TOFU names, nothing of
// .cache/tofu needed.
func TestParallelDemoTofu(t *testing.T) {
	t.Parallel()
	root := tofu.ModuleRoot(t)
	bin := tofu.Binary(t)
	if _, err := exec.LookPath("make"); err != nil {
		tofu.Unavailable(t, "make: %v", err)
	}
	dryRun := func(env ...string) string {
		cmd := exec.CommandContext(t.Context(), "make", "-n", "parallel-demo")
		cmd.Dir = root
		cmd.Env = append(tofu.CleanEnv("TOFU", "PATH"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n parallel-demo: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := dryRun("PATH="+os.Getenv("PATH"), "TOFU="+bin); strings.Contains(out, "install-tofu") {
		t.Errorf("make parallel-demo TOFU=%s would build OpenTofu:\n%s", bin, out)
	}
	pathDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(pathDir, "tofu")); err != nil {
		t.Fatal(err)
	}
	if out := dryRun("PATH=" + pathDir + ":" + os.Getenv("PATH")); strings.Contains(out, "install-tofu") {
		t.Errorf("make parallel-demo with tofu in PATH would build OpenTofu:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(root, ".cache", "tofu", "bin", "tofu")); os.IsNotExist(err) {
		if out := dryRun("PATH=/usr/bin:/bin"); !strings.Contains(out, "install-tofu") {
			t.Errorf("make parallel-demo with no tofu at all would not build it:\n%s", out)
		}
	}

	srv := tofu.StartKLD(t, filepath.Join(t.TempDir(), "kilolock.db"))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "examples", "parallel-apply", "demo.sh"))
	cmd.Env = append(tofu.CleanEnv("TOFU", "KL_", "TF_"), "TOFU="+bin, "KL_SERVER="+srv.URL, "KL="+tofu.BuildKL(t), "KLD="+tofu.BuildKLD(t), "SLEEP=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "both applies done") {
		t.Errorf("demo.sh with TOFU=%s: %v\n%s", bin, err, out)
	}
}
