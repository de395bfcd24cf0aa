package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMENamesSettings: every variable the demo's scripts read
// (${VAR:-default}) is in the README's table of settings, so none is
// documented only in a script's comments.
func TestREADMENamesSettings(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := filepath.Glob("*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	read := regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]*[A-Za-z0-9_]*):-`)
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range read.FindAllStringSubmatch(string(b), -1) {
			if !strings.Contains(string(readme), "| `"+m[1]+"` |") {
				t.Errorf("%s reads %s, which README.md's table of settings does not name", s, m[1])
			}
		}
	}
}
