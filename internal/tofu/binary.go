package tofu

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment variables the harness reads.
const (
	// EnvTofu names the tofu binary to use instead of the cached one.
	EnvTofu = "KL_TOFU"
	// EnvTerraform names the terraform binary to use instead of the
	// cached one.
	EnvTerraform = "KL_TERRAFORM"
	// EnvTofuCache names the directory scripts/install-tofu.sh installs
	// into, .cache/tofu under the module root when unset.
	EnvTofuCache = "KL_TOFU_CACHE"
)

const modulePath = "github.com/kilolock/kilolock"

var (
	rootOnce sync.Once
	root     string
	rootErr  error
)

// ModuleRoot returns the directory of the kilolock go.mod, found by walking
// up from the working directory (go test runs in the package directory).
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	rootOnce.Do(func() { root, rootErr = findModuleRoot() })
	if rootErr != nil {
		tb.Fatalf("tofu: %v", rootErr)
	}
	return root
}

func findModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

func isModuleRoot(goMod string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == modulePath
		}
	}
	return false
}

// InCI reports whether CI=true (or 1): then a missing tool fails the test
// instead of skipping it.
func InCI() bool {
	ok, _ := strconv.ParseBool(os.Getenv("CI"))
	return ok
}

// Unavailable skips tb with the reason, or fails it when InCI.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("CI=true and "+format, args...)
	}
	tb.Skipf(format, args...)
}

func cacheDir(tb testing.TB) string {
	if d := os.Getenv(EnvTofuCache); d != "" {
		return d
	}
	return filepath.Join(ModuleRoot(tb), ".cache", "tofu")
}

// probes holds each CLI's `version`, run once per test binary.
var probes [len(kinds)]struct {
	once    sync.Once
	version string
	err     error
}

// Binary returns the path of the tofu binary: OpenTofu.Binary.
func Binary(tb testing.TB) string {
	tb.Helper()
	return OpenTofu.Binary(tb)
}

// Binary returns the path of the CLI's binary: $KL_TOFU (OpenTofu) or
// $KL_TERRAFORM (Terraform), else bin/tofu or bin/terraform in the cache
// (.cache/tofu under the module root, or $KL_TOFU_CACHE). When there is
// none it skips tb, or fails it when CI=true; a binary that does not run
// always fails.
func (k Kind) Binary(tb testing.TB) string {
	tb.Helper()
	spec := kinds[k]
	bin := os.Getenv(spec.env)
	if bin == "" {
		bin = filepath.Join(cacheDir(tb), "bin", spec.command)
		if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
			Unavailable(tb, "%s is not installed at %s: run `make tofu` (%s) or set %s", spec.product, bin, spec.script, spec.env)
		}
	}
	p := &probes[k]
	p.once.Do(func() { p.version, p.err = probe(bin) })
	if p.err != nil {
		tb.Fatalf("tofu: %s (%s) does not run: %v", bin, spec.product, p.err)
	}
	return bin
}

// Version returns the first line of `tofu version`, e.g. "OpenTofu v1.10.10".
func Version(tb testing.TB) string {
	tb.Helper()
	return OpenTofu.Version(tb)
}

// Version returns the first line of the CLI's `version`, e.g. "OpenTofu
// v1.10.10" or "Terraform v1.5.7".
func (k Kind) Version(tb testing.TB) string {
	tb.Helper()
	k.Binary(tb)
	return probes[k].version
}

func probe(bin string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "version")
	// No checkpoint: Terraform would ask HashiCorp for its latest release.
	cmd.Env = append(CleanEnv("TF_", "CHECKPOINT_"), "CHECKPOINT_DISABLE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s version: %w\n%s", bin, err, out)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first), nil
}

// cliConfig returns a CLI configuration for k that installs hashicorp/time
// (at k's registry host) from the filesystem mirror the install scripts
// fill, when there is one, and never reaches the network for it.
func cliConfig(tb testing.TB, k Kind) string {
	mirror := filepath.Join(cacheDir(tb), "mirror")
	if st, err := os.Stat(mirror); err != nil || !st.IsDir() {
		return "# no provider mirror: only built-in providers are available\n"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "provider_installation {\n")
	provider := k.Registry() + "/hashicorp/time"
	fmt.Fprintf(&b, "  filesystem_mirror {\n    path    = %q\n    include = [%q]\n  }\n", mirror, provider)
	fmt.Fprintf(&b, "  direct {\n    exclude = [%q]\n  }\n", provider)
	fmt.Fprintf(&b, "}\n")
	return b.String()
}

// CleanEnv returns the environment without the variables that start with
// one of prefixes: what a command the tests start runs with, free of a
// developer's settings (KL_, TF_, …).
func CleanEnv(prefixes ...string) []string { return withoutVars(os.Environ(), prefixes...) }

// withoutVars returns env without the variables that start with one of
// prefixes.
func withoutVars(env []string, prefixes ...string) []string {
	var out []string
	for _, kv := range env {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			out = append(out, kv)
		}
	}
	return out
}

// CLIConfigFile writes the harness's CLI configuration of OpenTofu:
// OpenTofu.CLIConfigFile.
func CLIConfigFile(tb testing.TB) string {
	tb.Helper()
	return OpenTofu.CLIConfigFile(tb)
}

// CLIConfigFile writes the harness's CLI configuration of the CLI
// (hashicorp/time from the local mirror, nothing from the network) to a
// file of tb's and returns its path, for programs that run the CLI
// themselves (TF_CLI_CONFIG_FILE).
func (k Kind) CLIConfigFile(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), k.String()+"rc")
	if err := os.WriteFile(path, []byte(cliConfig(tb, k)), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}
