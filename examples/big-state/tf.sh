# Sourced by the demo scripts: the CLI (TF_BIN, a name in PATH or a path;
# default the project's pinned OpenTofu), the project's CLI config for it
# (hashicorp/time from the local mirror, nothing from the network: tofurc
# for OpenTofu, terraformrc for Terraform, as make tofu writes them) and no
# prompts. Sets tf, root, server, state and url.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
server=${KL_SERVER:-http://localhost:8080}
server=${server%/}
state=${STATE:-big-state}
url=$server/v1/states/$state
cache=${KL_TOFU_CACHE:-$root/.cache/tofu}
tf=${TF_BIN:-$cache/bin/tofu}
if ! command -v "$tf" >/dev/null; then
  echo "no CLI $tf: run make tofu, or set TF_BIN (e.g. TF_BIN=terraform)" >&2
  exit 1
fi
export TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1
# Terraform resolves hashicorp/time at registry.terraform.io, OpenTofu at
# registry.opentofu.org: each has its config.
rc=$cache/tofurc
[[ $("$tf" version 2>/dev/null) != Terraform* ]] || rc=$cache/terraformrc
if [ -z "${TF_CLI_CONFIG_FILE:-}" ] && [ -f "$rc" ]; then
  export TF_CLI_CONFIG_FILE=$rc
fi

# prepare DIR: a copy of the configuration in DIR, initialized against
# $url on first use (and again when KL_SERVER or STATE changed).
prepare() {
  local dir=$1 here=$root/examples/big-state
  mkdir -p "$dir"
  cp "$here/main.tf" "$here/backend.tf" "$dir/"
  rm -rf "$dir/herd" && cp -r "$here/herd" "$dir/herd"
  if [ "$(cat "$dir/.kl-url" 2>/dev/null)" != "$url" ] || [ ! -d "$dir/.terraform" ]; then
    "$tf" -chdir="$dir" init -reconfigure -input=false -no-color \
      -backend-config="address=$url" -backend-config="lock_address=$url" -backend-config="unlock_address=$url" >/dev/null
    echo "$url" >"$dir/.kl-url"
  fi
}
