#!/usr/bin/env bash
# Regenerates the plan fixtures under reserve/testdata/plans/: each
# NAME.json is `tofu show -json` of a plan the real OpenTofu CLI made from
# config/ (ids and times change on every run; the tests rely only on the
# shape of the changes).
#
#   reserve/testdata/plans/generate.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tofu=$("$root/scripts/install-tofu.sh" | tail -n 1) # KL_TOFU_CACHE, else .cache/tofu
export TF_CLI_CONFIG_FILE=$(dirname "$tofu")/../tofurc TF_IN_AUTOMATION=1 TF_INPUT=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$here/config/." "$work/"
cd "$work"
tf() { "$tofu" "$@" -no-color >/dev/null; }
plan() { # plan NAME ARGS...: save the plan of ARGS as NAME.json
  local name=$1; shift
  tf plan -out=p.tfplan "$@"
  "$tofu" show -json p.tfplan >"$here/$name.json"
}

tf init
plan create
tf apply -auto-approve
plan replace_a -var slow_a_version=v2
plan reader_only -var reader_version=v2
plan add_region -var 'regions=["eu","us","ap"]'
plan drop_region -var 'regions=["eu"]'
