# Sourced by the demo scripts: the CLI (TF_BIN, a name in PATH or a path;
# default the project's pinned OpenTofu), the project's CLI config
# (hashicorp/time from the local mirror, nothing from the network) and no
# prompts. Sets tf, root, server, state and url.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
server=${KL_SERVER:-http://localhost:8080}
server=${server%/}
state=${STATE:-big-state}
url=$server/v1/states/$state
tf=${TF_BIN:-$root/.cache/tofu/bin/tofu}
if ! command -v "$tf" >/dev/null; then
  echo "no CLI $tf: run make tofu, or set TF_BIN (e.g. TF_BIN=terraform)" >&2
  exit 1
fi
export TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1
if [ -z "${TF_CLI_CONFIG_FILE:-}" ] && [ -f "$root/.cache/tofu/tofurc" ]; then
  export TF_CLI_CONFIG_FILE=$root/.cache/tofu/tofurc
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
