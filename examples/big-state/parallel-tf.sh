#!/usr/bin/env bash
# One terminal of the parallel beat, with the plain CLI: replaces
# time_sleep.slow_SIDE (a new slow_SIDE_version) and passes the other slow
# resource's version as the state holds it, from /tmp/parallel-tf-SIDE/
# (prepared on first use), with -refresh=false and no -target.
#
#   examples/big-state/parallel-tf.sh a|b [tofu apply flags…]
#
# KL_SERVER (default http://localhost:8080), STATE (default big-state),
# TF_BIN (default the pinned OpenTofu), KL (default bin/kl); PARALLEL_TF_DIR
# (default /tmp) holds the working directories. TF_VAR_herd_size and
# TF_VAR_slow_seconds, as for demo-warm.sh.
set -euo pipefail
source "$(dirname "$0")/tf.sh"
side=${1:?usage: parallel-tf.sh a|b [tofu apply flags…]}
shift
case $side in
  a) other=b ;;
  b) other=a ;;
  *) echo "parallel-tf.sh: side is a or b, not $side" >&2; exit 2 ;;
esac
kl=${KL:-$root/bin/kl}
dir=${PARALLEL_TF_DIR:-/tmp}/parallel-tf-$side
prepare "$dir"

# The other side's version as the state holds it, so this apply leaves
# that resource alone.
where=(--server "$server")
[ -z "${KL_DATABASE_URL:-}" ] || where=() # kl reads the database itself
current=$("$kl" "${where[@]}" state show "$state" "time_sleep.slow_$other" |
  sed -n 's/^ *"version": "\(.*\)"$/\1/p')
if [ -z "$current" ]; then
  echo "parallel-tf.sh: no time_sleep.slow_$other in state $state: run make demo-warm first" >&2
  exit 1
fi
new=$side-$(date +%s)

color=()
[ -t 1 ] || color=(-no-color)
start=$EPOCHREALTIME
set +e
"$tf" -chdir="$dir" apply -auto-approve -refresh=false "${color[@]}" \
  "-var=slow_${side}_version=$new" "-var=slow_${other}_version=$current" "$@" 2>&1 | sed -u "s/^/[$side] /"
rc=${PIPESTATUS[0]}
set -e
elapsed=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }')
echo "[$side] $(basename "$tf") apply -refresh=false -var=slow_${side}_version=$new -var=slow_${other}_version=$current exited $rc after ${elapsed}s"
exit "$rc"
