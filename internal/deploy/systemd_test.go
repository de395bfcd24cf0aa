package deploy_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// securityThreshold is the most `systemd-analyze security` may score the
// unit, on its 0-100 scale (the 0.0-10.0 it prints, times ten): 2.0 and
// below is "OK".
const securityThreshold = 20

// TestSystemdUnit checks deploy/systemd/kld.service with the real
// systemd-analyze: verify finds nothing to say of it (an unknown key or a
// value it cannot parse is only a warning there, so any output fails),
// and security scores its hardening OK. Both read the unit in a root
// directory of its own, where the kld built from this checkout is
// installed at the path ExecStart names, beside the environment file it
// names and the host's system units (those its default dependencies
// need): verify checks that ExecStart is an executable there. A copy with
// a misspelled key must be complained of, so that a verify that says
// nothing is known to have read the unit.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		tofu.Unavailable(t, "no systemd-analyze: install systemd (apt-get install systemd)")
	}
	unit, err := os.ReadFile(filepath.Join(tofu.ModuleRoot(t), "deploy/systemd/kld.service"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	execStart := directive(t, unit, "ExecStart")
	envFile := directive(t, unit, "EnvironmentFile")
	if execStart != "/usr/local/bin/kld" || envFile != "/etc/kilolock/kld.env" {
		t.Errorf("ExecStart=%s EnvironmentFile=%s: docs/deploy.md installs /usr/local/bin/kld and /etc/kilolock/kld.env", execStart, envFile)
	}
	install(t, tofu.BuildKLD(t), filepath.Join(root, execStart), 0o755)
	install(t, filepath.Join(tofu.ModuleRoot(t), "deploy/systemd/kld.env"), filepath.Join(root, envFile), 0o640)
	copyTree(t, "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/system"))
	unitPath := filepath.Join(root, "etc/systemd/system/kld.service")
	if err := os.MkdirAll(filepath.Dir(unitPath), 0o755); err != nil {
		t.Fatal(err)
	}

	verify := func(content []byte) string {
		t.Helper()
		if err := os.WriteFile(unitPath, content, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(analyze, "verify", "--root="+root, "kld.service").CombinedOutput()
		if err != nil {
			return string(out) + "\n(" + err.Error() + ")"
		}
		return string(out)
	}
	misspelled := bytes.Replace(unit, []byte("\nProtectSystem="), []byte("\nProtectSytem="), 1)
	if out := verify(misspelled); !strings.Contains(out, "ProtectSytem") {
		t.Fatalf("systemd-analyze verify said nothing of a misspelled key, so it cannot be trusted with the unit:\n%s", out)
	}
	if out := verify(unit); out != "" {
		t.Errorf("systemd-analyze verify deploy/systemd/kld.service:\n%s", out)
	}

	out, err := exec.Command(analyze, "security", "--offline=true", "--root="+root, "--threshold="+strconv.Itoa(securityThreshold), "kld.service").CombinedOutput()
	level := regexp.MustCompile(`Overall exposure level for kld.service: ([0-9.]+ \S+)`).FindSubmatch(out)
	if err != nil || level == nil {
		t.Errorf("systemd-analyze security scores the unit above %d/100, or could not (%v):\n%s", securityThreshold, err, out)
	} else {
		t.Logf("FIGURE systemd: systemd-analyze security exposure %s", level[1])
	}
}

// directive is the value of the unit's first key=value line of key.
func directive(t *testing.T, unit []byte, key string) string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+"="); ok {
			return strings.TrimPrefix(v, "-")
		}
	}
	t.Fatalf("the unit has no %s=", key)
	return ""
}

func install(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the files and links under from to to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		target := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", from, err)
	}
}
