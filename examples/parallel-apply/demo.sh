#!/usr/bin/env bash
# The whole demo in one command: a kld (the one answering at KL_SERVER, else
# a new one there on a temporary database), the seed, then terminal A's and
# terminal B's applies at once. Prints each apply's time and the total.
#
#   examples/parallel-apply/demo.sh        # or: make parallel-demo
#
# SLEEP (default 15) is how many seconds each apply's resource takes to
# create; KLD and KL the commands (default bin/kld and bin/kl, which
# `make build` builds).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export KL_SERVER=${KL_SERVER:-http://localhost:8080}
export KL=${KL:-$root/bin/kl}
kld=${KLD:-$root/bin/kld}
sleep=${SLEEP:-15}

ready() { curl -fsS -o /dev/null --max-time 2 "$KL_SERVER/readyz"; }

if ready 2>/dev/null; then
  echo "== using the kld at $KL_SERVER"
else
  tmp=$(mktemp -d)
  hostport=${KL_SERVER#*://}
  hostport=${hostport%%/*}
  echo "== starting kld on $hostport with the database $tmp/kilolock.db"
  "$kld" --listen "$hostport" --database "$tmp/kilolock.db" >"$tmp/kld.log" 2>&1 &
  kld_pid=$!
  trap 'kill "$kld_pid" 2>/dev/null; wait "$kld_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
  for _ in $(seq 100); do
    ready 2>/dev/null && break
    if ! kill -0 "$kld_pid" 2>/dev/null; then
      echo "kld exited:" >&2
      cat "$tmp/kld.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  ready
fi

echo "== seeding parallel-demo (a=v1 b=v1) and making it optimistic"
"$here/seed.sh"

echo "== terminal A (a=v2) and terminal B (b=v2) at once; each apply creates one resource that takes ${sleep}s"
start=$EPOCHREALTIME
"$here/apply.sh" a -var a=v2 -var b=v1 -var sleep="$sleep" &
pid_a=$!
"$here/apply.sh" b -var a=v1 -var b=v2 -var sleep="$sleep" &
pid_b=$!
rc_a=0 rc_b=0
wait "$pid_a" || rc_a=$?
wait "$pid_b" || rc_b=$?
end=$EPOCHREALTIME
total=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')

echo "== both applies done in ${total}s in all (each apply alone takes about ${sleep}s: its resource sleeps that long); exit codes: A $rc_a, B $rc_b"
"$KL" history parallel-demo --limit 3
echo "== the state's outputs now:"
. "$here/tofu.sh"
if [ -f "$root/.cache/tofu/tofurc" ]; then export TF_CLI_CONFIG_FILE=$root/.cache/tofu/tofurc; fi
"$tofu" -chdir="$root/.cache/parallel-apply/seed" output -no-color
exit $((rc_a | rc_b))
