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
TIME_VERSION=${TIME_VERSION:-0.14.2}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${KL_TOFU_CACHE:-$root/.cache/tofu}
bin=$cache/bin
mirror=$cache/mirror
tofu=$bin/tofu-$TOFU_VERSION
provider_dir=$mirror/registry.opentofu.org/hashicorp/time/$TIME_VERSION/linux_amd64
provider=$provider_dir/terraform-provider-time_v$TIME_VERSION

mkdir -p "$bin" "$provider_dir"

if [ ! -x "$tofu" ]; then
  echo "building OpenTofu $TOFU_VERSION from the Go module proxy (about 3 minutes cold)" >&2
  GOFLAGS=-mod=mod go mod download "github.com/opentofu/opentofu@$TOFU_VERSION"
  src=$(go env GOMODCACHE)/github.com/opentofu/opentofu@$TOFU_VERSION
  (cd "$src" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -o "$tofu.tmp" ./cmd/tofu)
  mv "$tofu.tmp" "$tofu"
fi
ln -sf "$tofu" "$bin/tofu"

if [ ! -x "$provider" ]; then
  echo "building terraform-provider-time v$TIME_VERSION" >&2
  gobin=$cache/gobin
  GOBIN=$gobin CGO_ENABLED=0 go install "github.com/hashicorp/terraform-provider-time@v$TIME_VERSION"
  cp "$gobin/terraform-provider-time" "$provider.tmp"
  mv "$provider.tmp" "$provider"
fi

# A CLI config that resolves hashicorp/time from the local mirror and never
# reaches for the network for anything else.
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

echo "$tofu"
