package deploy_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// kVariable is a KL_ environment variable's name.
var kVariable = regexp.MustCompile(`\bKL_[A-Z0-9_]*[A-Z0-9]\b`)

// TestDeployVariables: every KL_ variable the deployment files set (the
// image, the systemd environment file, the Kubernetes manifests) is one
// kld reads, as its --help lists them, and every one docs/deploy.md names
// is kld's or kl's. kld ignores a variable it does not know, so a
// misspelled one would silently leave a setting at its default.
func TestDeployVariables(t *testing.T) {
	t.Parallel()
	known := func(bin string) []string {
		out, err := exec.Command(bin, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", bin, err, out)
		}
		return kVariable.FindAllString(string(out), -1)
	}
	kld := known(tofu.BuildKLD(t))
	both := append(slices.Clone(kld), known(tofu.BuildKL(t))...)
	root := tofu.ModuleRoot(t)

	seen := 0
	err := filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".mod") || strings.HasSuffix(p, ".sum") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, v := range kVariable.FindAllString(string(b), -1) {
			seen++
			if !slices.Contains(kld, v) {
				t.Errorf("%s names %s, which kld does not read (kld --help lists those it does)", p, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no KL_ variable in deploy/: the walk read nothing")
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range kVariable.FindAllString(string(doc), -1) {
		if !slices.Contains(both, v) {
			t.Errorf("docs/deploy.md names %s, which neither kld nor kl reads", v)
		}
	}
}
