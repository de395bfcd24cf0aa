// Package tofu is the harness the end-to-end tests drive the real OpenTofu
// CLI (or the real Terraform CLI) and a real kld with.
//
// It finds the tofu binary (KL_TOFU, else .cache/tofu/bin/tofu under the
// module root, as scripts/install-tofu.sh builds it), writes a CLI
// configuration of its own for every work directory, so the machine's
// TF_CLI_CONFIG_FILE, TF_HTTP_* or TF_LOG never leak in, and builds cmd/kld
// and cmd/kl once per test binary with the release ldflags of
// scripts/version.sh. Every helper drives OpenTofu; the methods of Kind
// drive the one named: Terraform.NewWorkdir is a working directory of
// Terraform v1.5.7 (KL_TERRAFORM, else .cache/tofu/bin/terraform, as
// scripts/install-terraform.sh builds it).
//
// A missing CLI skips the test with the reason, unless CI=true: in CI it
// fails it.
//
//	func TestApply(t *testing.T) {
//		srv := tofu.StartKLD(t, filepath.Join(t.TempDir(), "kilolock.db"))
//		wd := tofu.NewWorkdir(t, srv.Backend("example")+`resource "terraform_data" "a" {}`)
//		wd.Must("init")
//		wd.Must("apply", "-auto-approve")
//	}
package tofu
