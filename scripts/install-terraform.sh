#!/usr/bin/env bash
# Builds HashiCorp Terraform v1.5.7 (its last MPL-2.0 release) from the Go
# module proxy into the cache scripts/install-tofu.sh fills, so the
# end-to-end tests drive the real Terraform CLI beside OpenTofu. Release
# download sites are unreachable on our machines; the module proxy is not.
# It does nothing when the pinned binary is already there.
#
#   scripts/install-terraform.sh       # installs into .cache/tofu (or $KL_TOFU_CACHE)
#
# Terraform resolves hashicorp/time at registry.terraform.io, OpenTofu at
# registry.opentofu.org: the provider install-tofu.sh builds is placed in
# the filesystem mirror under both (run install-tofu.sh first; `make tofu`
# runs both). Prints the path of the terraform binary on its last line.
set -euo pipefail

TERRAFORM_VERSION=${TERRAFORM_VERSION:-v1.5.7}
source "$(dirname "$0")/cli-cache.sh"
terraform=$bin/terraform-$TERRAFORM_VERSION
tofu_provider=$mirror/registry.opentofu.org/hashicorp/time/$TIME_VERSION/$platform/terraform-provider-time_v$TIME_VERSION
provider_dir=$mirror/registry.terraform.io/hashicorp/time/$TIME_VERSION/$platform
provider=$provider_dir/terraform-provider-time_v$TIME_VERSION

# At its release tag Terraform's version package has no prerelease marker:
# a release build says "Terraform v1.5.7". Anything else (a "-dev" build, a
# binary that does not run) is rebuilt. CHECKPOINT_DISABLE keeps `terraform
# version` from asking HashiCorp for the latest release.
built=""
if [ -x "$terraform" ]; then
  built=$(CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=/dev/null "$terraform" version 2>/dev/null || true)
fi
if [[ ${built%%$'\n'*} != "Terraform $TERRAFORM_VERSION" ]]; then
  echo "building Terraform $TERRAFORM_VERSION from the Go module proxy (about 2 minutes cold)" >&2
  (cd "$neutral" && GOFLAGS=-mod=mod GOWORK=off go mod download "github.com/hashicorp/terraform@$TERRAFORM_VERSION")
  src=$(go env GOMODCACHE)/github.com/hashicorp/terraform@$TERRAFORM_VERSION
  (cd "$src" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w" -o "$terraform.tmp" .)
  mv "$terraform.tmp" "$terraform"
fi
ln -sfn "terraform-$TERRAFORM_VERSION" "$bin/terraform.tmp"
mv -T "$bin/terraform.tmp" "$bin/terraform"

# The same provider binary, where Terraform's filesystem mirror looks for
# registry.terraform.io/hashicorp/time (a copy: the mirror's unpacked
# layout wants an executable file in the platform directory).
if [ -x "$tofu_provider" ] && ! cmp -s "$tofu_provider" "$provider"; then
  mkdir -p "$provider_dir"
  cp "$tofu_provider" "$provider.tmp"
  mv "$provider.tmp" "$provider"
fi
if [ ! -x "$provider" ]; then
  echo "no hashicorp/time provider for Terraform: run scripts/install-tofu.sh first (make tofu runs both)" >&2
fi

# A CLI config that resolves hashicorp/time from the local mirror and never
# reaches for the network for anything else, for running terraform by hand
# (TF_CLI_CONFIG_FILE=...). The tests write their own, the same.
cat > "$cache/terraformrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.terraform.io/hashicorp/time"]
  }
  direct {
    exclude = ["registry.terraform.io/hashicorp/time"]
  }
}
RC

version=$(CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=$cache/terraformrc "$bin/terraform" version)
echo "${version%%$'\n'*}" >&2
echo "$terraform"
