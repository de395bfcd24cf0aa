// Command big-state writes the state that applying this directory's
// configuration (main.tf, herd/) with its defaults gives: time_sleep.slow_a
// and slow_b at version v1 and a herd of -n terraform_data resources in
// -groups modules, so that `make demo-warm` can restore it in seconds
// rather than apply thousands of resources, and `tofu plan
// -refresh=false` right after shows no changes. -cli terraform writes it
// as Terraform v1.5.7 does (hashicorp/time at registry.terraform.io), for
// the demo run with TF_BIN=terraform.
//
//	go run ./examples/big-state -n 10000 -o big-state.tfstate
//
// The same flags give the same bytes (ids are derived from addresses, the
// lineage is fixed), so restoring it again changes no instance.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// Lineage is the warm state's lineage, the same on every run.
const Lineage = "b16e57a7-0000-4000-8000-000000010000"

func main() {
	n := flag.Int("n", 10000, "resources in the herd (var.herd_size)")
	groups := flag.Int("groups", 10, "modules the herd is split into (var.herd_groups)")
	seconds := flag.Int("slow-seconds", 30, "var.slow_seconds")
	out := flag.String("o", "big-state.tfstate", "file to write")
	cliName := flag.String("cli", "tofu", "the CLI that plans against it: tofu or terraform")
	flag.Parse()
	cli, ok := clis[*cliName]
	if *groups < 1 || *n < 0 || !ok {
		fmt.Fprintln(os.Stderr, "big-state: -groups must be at least 1, -n not negative and -cli tofu or terraform")
		os.Exit(2)
	}
	data := graphtest.Encode(State(*n, *groups, *seconds, cli), cli.Format)
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "big-state: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: %d herd resources in %d modules, %d bytes\n", *out, *groups*(*n / *groups), *groups, len(data))
}

// CLI is what of a state depends on the CLI that wrote it.
type CLI struct {
	// Version is its terraform_version.
	Version string
	// Registry is the host it resolves hashicorp/time at.
	Registry string
	// Format is the layout it writes state in.
	Format graph.Format
}

// clis are the CLIs -cli names: the project's pinned OpenTofu and
// Terraform v1.5.7. The state is written byte for byte as each writes it
// (its layout, its key order), so that the demo's first apply finds
// every unchanged instance by its bytes, as every later one does.
var clis = map[string]CLI{
	"tofu":      {Version: "1.10.10", Registry: "registry.opentofu.org", Format: graph.FormatCompact},
	"terraform": {Version: "1.5.7", Registry: "registry.terraform.io", Format: graph.FormatIndent},
}

// dynamic is a dynamically typed value as both CLIs write one (terraform_
// data's input and output): the value, then its type.
type dynamic struct {
	Value json.RawMessage `json:"value"`
	Type  json.RawMessage `json:"type"`
}

// State is the state of the configuration applied with herd_size n,
// herd_groups groups and slow_seconds seconds, as cli writes it.
func State(n, groups, seconds int, cli CLI) *graphtest.StateV4 {
	per := n / groups
	s := &graphtest.StateV4{
		Version:          4,
		TerraformVersion: cli.Version,
		Serial:           1,
		Lineage:          Lineage,
		Outputs:          map[string]graphtest.OutputV4{"herd_size": {Value: raw(per * groups), Type: raw("number")}},
		CheckResults:     json.RawMessage("null"),
	}
	for _, name := range []string{"slow_a", "slow_b"} {
		s.Resources = append(s.Resources, graphtest.ResourceV4{
			Mode: "managed", Type: "time_sleep", Name: name,
			Provider: `provider["` + cli.Registry + `/hashicorp/time"]`,
			Instances: []graphtest.InstanceV4{{
				Attributes: raw(map[string]any{
					"create_duration":  fmt.Sprintf("%ds", seconds),
					"destroy_duration": nil,
					"id":               "2026-01-01T00:00:00Z",
					"triggers":         map[string]string{"version": "v1"},
				}),
				SensitiveAttributes: json.RawMessage("[]"),
			}},
		})
	}
	objType := raw([]any{"object", map[string]string{"group": "number", "index": "number", "name": "string"}})
	for g := range groups {
		r := graphtest.ResourceV4{
			Module: fmt.Sprintf("module.herd[%d]", g),
			Mode:   "managed", Type: "terraform_data", Name: "node",
			Provider: `provider["terraform.io/builtin/terraform"]`,
		}
		for i := range per {
			value := map[string]any{"group": g, "index": i, "name": fmt.Sprintf("node-%02d-%05d", g, i)}
			typed := dynamic{Value: raw(value), Type: objType}
			r.Instances = append(r.Instances, graphtest.InstanceV4{
				IndexKey: i,
				Attributes: raw(map[string]any{
					"id":               uuid(fmt.Sprintf("%s.terraform_data.node[%d]", r.Module, i)),
					"input":            typed,
					"output":           typed,
					"triggers_replace": nil,
				}),
				SensitiveAttributes: json.RawMessage("[]"),
			})
		}
		if per > 0 {
			s.Resources = append(s.Resources, r)
		}
	}
	return s
}

// uuid is a UUID-shaped id derived from an address, as terraform_data's
// random ones look.
func uuid(address string) string {
	h := sha256.Sum256([]byte(address))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
