#!/usr/bin/env bash
# Runs `kl apply --orchestrated` on the big-state demo state from a copy of
# this directory's configuration of its own, .cache/orchestrated/NAME, as
# one terminal of the wait and parallel demos does.
#
#   examples/big-state/orchestrated.sh NAME [kl apply flags…]
#   examples/big-state/orchestrated.sh waiter -f slow_a.tf --var slow_a_version=v2 --wait-timeout 2m
#
# KL_SERVER (default http://localhost:8080) is the kld, STATE (default
# big-state) the state; KL the kl binary (default bin/kl, `make build`);
# TOFU the tofu binary (default .cache/tofu/bin/tofu, `make tofu`).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name=${1:?usage: orchestrated.sh NAME [kl apply flags…]}
shift
server=${KL_SERVER:-http://localhost:8080}
state=${STATE:-big-state}
kl=${KL:-$root/bin/kl}
tofu=${TOFU:-$root/.cache/tofu/bin/tofu}
for bin in "$kl" "$tofu"; do
  if [ ! -x "$bin" ]; then
    echo "orchestrated.sh: no $bin: run make build and make tofu" >&2
    exit 1
  fi
done

dir=$root/.cache/orchestrated/$name
mkdir -p "$dir"
cp "$here"/*.tf "$dir/"
export TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1 KL_TF_BIN=$tofu
if [ -f "$root/.cache/tofu/tofurc" ]; then
  export TF_CLI_CONFIG_FILE=$root/.cache/tofu/tofurc
fi
url=$server/v1/states/$state
"$tofu" -chdir="$dir" init -reconfigure -no-color \
  -backend-config="address=$url" -backend-config="lock_address=$url" -backend-config="unlock_address=$url" >/dev/null

cd "$dir"
start=$EPOCHREALTIME
set +e
"$kl" apply --orchestrated "$@" 2>&1 | sed -u "s/^/[$name] /"
rc=${PIPESTATUS[0]}
set -e
elapsed=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }')
echo "[$name] kl apply --orchestrated $* exited $rc after ${elapsed}s"
exit "$rc"
