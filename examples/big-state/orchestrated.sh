#!/usr/bin/env bash
# Runs `kl apply --orchestrated` on the big-state demo state from a copy of
# this directory's configuration of its own, .cache/orchestrated/NAME, as
# one terminal of the wait and parallel demos does.
#
#   examples/big-state/orchestrated.sh NAME [kl apply flags…]
#   examples/big-state/orchestrated.sh waiter --target time_sleep.slow_a --var slow_a_version=v2 --wait-timeout 2m
#
# KL_SERVER (default http://localhost:8080) is the kld, STATE (default
# big-state) the state; KL the kl binary (default bin/kl, `make build`);
# TF_BIN the CLI (default .cache/tofu/bin/tofu, `make tofu`).
set -euo pipefail

source "$(dirname "$0")/tf.sh"
name=${1:?usage: orchestrated.sh NAME [kl apply flags…]}
shift
kl=${KL:-$root/bin/kl}
if [ ! -x "$kl" ]; then
  echo "orchestrated.sh: no $kl: run make build" >&2
  exit 1
fi
export KL_TF_BIN=$tf KL_SERVER=$server
dir=${ORCHESTRATED_DIR:-$root/.cache/orchestrated}/$name
prepare "$dir"

cd "$dir"
start=$EPOCHREALTIME
set +e
"$kl" apply --orchestrated "$@" 2>&1 | sed -u "s/^/[$name] /"
rc=${PIPESTATUS[0]}
set -e
elapsed=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }')
echo "[$name] kl apply --orchestrated $* exited $rc after ${elapsed}s"
exit "$rc"
