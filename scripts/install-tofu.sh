#!/usr/bin/env bash
# Builds the pinned OpenTofu CLI and the hashicorp/time provider from the Go
# module proxy into a cache, so the end-to-end tests drive the real CLI.
# Release download sites are unreachable on our machines; the module proxy is not.
# It does nothing when the pinned binaries are already there.
#
#   scripts/install-tofu.sh            # installs into .cache/tofu (or $KL_TOFU_CACHE)
#
# Prints the path of the tofu binary on its last line.
set -euo pipefail

TOFU_VERSION=${TOFU_VERSION:-v1.10.10}
source "$(dirname "$0")/cli-cache.sh"
tofu=$bin/tofu-$TOFU_VERSION
provider_dir=$mirror/registry.opentofu.org/hashicorp/time/$TIME_VERSION/$platform
provider=$provider_dir/terraform-provider-time_v$TIME_VERSION
mkdir -p "$provider_dir"

# A release build says "OpenTofu v1.10.10"; a binary built without the
# release flag says "v1.10.10-dev" and is rebuilt.
# (Outputs are read whole, never piped into head: with pipefail a SIGPIPE
# would fail the script.)
built=""
if [ -x "$tofu" ]; then
  built=$(TF_CLI_CONFIG_FILE=/dev/null "$tofu" version 2>/dev/null || true)
fi
if [ -z "$built" ] || [[ ${built%%$'\n'*} == *-dev* ]]; then
  echo "building OpenTofu $TOFU_VERSION from the Go module proxy (about 3 minutes cold)" >&2
  (cd "$neutral" && GOFLAGS=-mod=mod GOWORK=off go mod download "github.com/opentofu/opentofu@$TOFU_VERSION")
  src=$(go env GOMODCACHE)/github.com/opentofu/opentofu@$TOFU_VERSION
  (cd "$src" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$tofu.tmp" ./cmd/tofu)
  mv "$tofu.tmp" "$tofu"
fi
ln -sfn "tofu-$TOFU_VERSION" "$bin/tofu.tmp"
mv -T "$bin/tofu.tmp" "$bin/tofu"

if [ ! -x "$provider" ]; then
  echo "building terraform-provider-time v$TIME_VERSION" >&2
  gobin=$cache/gobin
  (cd "$neutral" && GOWORK=off GOBIN=$gobin CGO_ENABLED=0 go install -trimpath "github.com/hashicorp/terraform-provider-time@v$TIME_VERSION")
  cp "$gobin/terraform-provider-time" "$provider.tmp"
  mv "$provider.tmp" "$provider"
fi

# A CLI config that resolves hashicorp/time from the local mirror and never
# reaches for the network for anything else. (The tests write their own,
# the same; this one is for running tofu by hand: TF_CLI_CONFIG_FILE=...)
cat > "$cache/tofurc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.opentofu.org/hashicorp/time"]
  }
  direct {
    exclude = ["registry.opentofu.org/hashicorp/time"]
  }
}
RC

version=$(TF_CLI_CONFIG_FILE=$cache/tofurc "$bin/tofu" version)
echo "${version%%$'\n'*}" >&2
echo "$tofu"
