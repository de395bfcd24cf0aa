# Sourced by install-tofu.sh and install-terraform.sh: where the CLIs, the
# provider mirror and their CLI configs live ($KL_TOFU_CACHE, default
# .cache/tofu), the hashicorp/time version both mirror, and a neutral
# directory for the Go commands, which run outside this repository so they
# can neither read nor change its go.mod and go.sum.
TIME_VERSION=${TIME_VERSION:-0.14.2}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${KL_TOFU_CACHE:-$root/.cache/tofu}
platform=$(go env GOOS)_$(go env GOARCH)
bin=$cache/bin
mirror=$cache/mirror
mkdir -p "$bin"
neutral=$(mktemp -d)
trap 'rm -rf "$neutral"' EXIT
