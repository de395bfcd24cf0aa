package reserve

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// Declaration is a root module block of a configuration file that puts
// things in the state: a resource, a data source or a module call.
type Declaration struct {
	Pattern Pattern // `aws_instance.web`, `data.t.n`, `module.net.*`
	File    string
	Line    int
}

// topBlocks are the blocks Declared reads; the rest of a file is skipped.
var topBlocks = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "resource", LabelNames: []string{"type", "name"}},
	{Type: "data", LabelNames: []string{"type", "name"}},
	{Type: "module", LabelNames: []string{"name"}},
}}

// Declared reads the resource, data and module blocks that the given
// configuration files (.tf, or .tf.json) declare, in file order.
func Declared(files []string) ([]Declaration, error) {
	p := hclparse.NewParser()
	var out []Declaration
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read configuration: %w", err)
		}
		var f *hcl.File
		var diags hcl.Diagnostics
		if strings.HasSuffix(path, ".json") {
			f, diags = p.ParseJSON(src, path)
		} else {
			f, diags = p.ParseHCL(src, path)
		}
		if diags.HasErrors() {
			return nil, fmt.Errorf("parse %s: %s", path, diags.Error())
		}
		content, _, diags := f.Body.PartialContent(topBlocks)
		if diags.HasErrors() {
			return nil, fmt.Errorf("parse %s: %s", path, diags.Error())
		}
		for _, b := range content.Blocks {
			var s string
			switch b.Type {
			case "resource":
				s = b.Labels[0] + "." + b.Labels[1]
			case "data":
				s = "data." + b.Labels[0] + "." + b.Labels[1]
			case "module":
				s = "module." + b.Labels[0] + ".*"
			}
			pat, err := Parse(s)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s %q: %v", path, b.DefRange.Start.Line, b.Type, strings.Join(b.Labels, "."), err)
			}
			out = append(out, Declaration{Pattern: pat, File: path, Line: b.DefRange.Start.Line})
		}
	}
	return out, nil
}

// ConfigFiles lists the configuration files of the root module in dir, as
// the CLIs read them (*.tf and *.tf.json, no override files).
func ConfigFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read configuration directory: %w", err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json")) {
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(n, ".json"), ".tf")
		if base == "override" || strings.HasSuffix(base, "_override") {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	slices.Sort(out)
	return out, nil
}

// Owner returns the declaration among decls that covers address, if any.
func Owner(decls []Declaration, address string) (Declaration, bool) {
	p, err := ParseKey(address)
	if err != nil {
		return Declaration{}, false
	}
	for _, d := range decls {
		if d.Pattern.Covers(p) {
			return d, true
		}
	}
	return Declaration{}, false
}
