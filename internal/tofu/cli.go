package tofu

import "testing"

// Kind is a CLI the harness drives: the project's pinned OpenTofu, which
// every helper of the package uses unless told otherwise, or HashiCorp
// Terraform 1.5.7, its last MPL-2.0 release.
type Kind int

const (
	// OpenTofu is the pinned OpenTofu scripts/install-tofu.sh builds.
	OpenTofu Kind = iota
	// Terraform is the Terraform v1.5.7 scripts/install-terraform.sh
	// builds.
	Terraform
)

// kinds is what differs between the CLIs.
var kinds = [...]struct {
	command  string // the binary's name in the cache's bin/
	product  string // how `version` names it
	env      string // the variable naming another binary
	registry string // the host it resolves hashicorp/time at
	script   string // the script that installs it
}{
	OpenTofu: {
		command:  "tofu",
		product:  "OpenTofu",
		env:      EnvTofu,
		registry: "registry.opentofu.org",
		script:   "scripts/install-tofu.sh",
	},
	Terraform: {
		command:  "terraform",
		product:  "Terraform",
		env:      EnvTerraform,
		registry: "registry.terraform.io",
		script:   "scripts/install-terraform.sh",
	},
}

// String is the CLI's command name: "tofu" or "terraform".
func (k Kind) String() string { return kinds[k].command }

// Registry is the registry host the CLI resolves hashicorp/time at, as
// state files name providers: provider["<Registry>/hashicorp/time"].
func (k Kind) Registry() string { return kinds[k].registry }

// NewWorkdir is the package's NewWorkdir for this CLI: a new working
// directory whose main.tf is hcl. It skips tb when the CLI is not
// installed (fails it when CI=true).
func (k Kind) NewWorkdir(tb testing.TB, hcl string) *Workdir {
	tb.Helper()
	return newWorkdir(tb, k, hcl)
}
