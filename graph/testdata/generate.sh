#!/usr/bin/env bash
# Regenerates the state fixtures under graph/testdata/<scenario>/:
#
#   terraform.tfstate         written by the real OpenTofu CLI (compact JSON)
#   terraform.indent.tfstate  the same state in Terraform's layout (indent.go)
#
# from the configuration next to them (main.tf). Lineages, ids and times
# change on every run; the tests only rely on the files being CLI output.
# The synthetic/ fixtures are hand-written (fields OpenTofu 1.10 never
# writes); this script only refreshes their indented variants.
#
#   graph/testdata/generate.sh          # uses .cache/tofu, building it if needed
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tofu=$root/.cache/tofu/bin/tofu
if [ ! -x "$tofu" ]; then
  tofu=$("$root/scripts/install-tofu.sh" | tail -n 1)
fi
export TF_CLI_CONFIG_FILE=$root/.cache/tofu/tofurc TF_IN_AUTOMATION=1 TF_INPUT=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# prepare NAME: copy the configuration of scenario NAME to a scratch dir and
# run tofu init there.
prepare() {
  rm -rf "${work:?}/$1"
  mkdir -p "$work/$1"
  (cd "$here/$1" && tar cf - --exclude='*.tfstate' --exclude='.terraform*' .) | (cd "$work/$1" && tar xf -)
  (cd "$work/$1" && "$tofu" init -no-color >/dev/null)
}
tf() { (cd "$work/$1" && shift && "$tofu" "$@" -no-color >/dev/null); }
keep() { cp "$work/$1/terraform.tfstate" "$here/$1/terraform.tfstate"; }

for s in basic modules checks sensitive escapes; do
  prepare "$s"
  tf "$s" apply -auto-approve
  keep "$s"
done

prepare data_source
cp "$here/basic/terraform.tfstate" "$work/data_source/other.tfstate"
tf data_source apply -auto-approve
keep data_source

prepare tainted
tf tainted apply -auto-approve
tf tainted taint 'terraform_data.t["b"]'
keep tainted

prepare deposed
tf deposed apply -auto-approve
# The replacement's provisioner fails on purpose; the apply exits 1.
tf deposed apply -auto-approve -var gen=2 2>/dev/null || true
keep deposed

prepare time
tf time apply -auto-approve
keep time

prepare empty
tf empty apply -auto-approve
tf empty destroy -auto-approve
keep empty

cd "$here"
for f in */terraform.tfstate; do
  go run indent.go "$f" "${f%.tfstate}.indent.tfstate"
done
