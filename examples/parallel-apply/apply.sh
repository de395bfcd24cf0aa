#!/usr/bin/env bash
# Runs `tofu apply -auto-approve` on the parallel-demo state from a copy of
# this directory of its own, .cache/parallel-apply/NAME, as one terminal of
# the demo does, and says how long the apply took.
#
#   examples/parallel-apply/apply.sh NAME [tofu apply flags…]
#   examples/parallel-apply/apply.sh a -var a=v2 -var b=v1 -var sleep=15
#
# KL_SERVER (default http://localhost:8080) is the kld; TOFU the tofu binary
# (default .cache/tofu/bin/tofu, which `make tofu` builds, else tofu in PATH).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name=${1:?usage: apply.sh NAME [tofu apply flags…]}
shift
server=${KL_SERVER:-http://localhost:8080}
. "$here/tofu.sh"
if [ -z "$tofu" ] || [ ! -x "$tofu" ]; then
  echo "apply.sh: no tofu (TOFU=${TOFU:-}, none in .cache/tofu/bin or PATH): set TOFU, or run make tofu" >&2
  exit 1
fi

dir=$root/.cache/parallel-apply/$name
mkdir -p "$dir"
cp "$here/main.tf" "$dir/main.tf"
# The project's CLI config (hashicorp/time from the local mirror, nothing
# from the network), and no prompts.
export TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1
if [ -f "$root/.cache/tofu/tofurc" ]; then
  export TF_CLI_CONFIG_FILE=$root/.cache/tofu/tofurc
fi
url=$server/v1/states/parallel-demo
"$tofu" -chdir="$dir" init -reconfigure -no-color \
  -backend-config="address=$url" -backend-config="lock_address=$url" -backend-config="unlock_address=$url" >/dev/null

color=()
[ -t 1 ] || color=(-no-color) # colours only for a terminal, not in a log
start=$EPOCHREALTIME
set +e
"$tofu" -chdir="$dir" apply -auto-approve "${color[@]}" "$@" 2>&1 | sed -u "s/^/[$name] /"
rc=${PIPESTATUS[0]}
set -e
end=$EPOCHREALTIME
elapsed=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')
echo "[$name] tofu apply $* exited $rc after ${elapsed}s"
exit "$rc"
