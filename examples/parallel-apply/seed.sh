#!/usr/bin/env bash
# Creates the parallel-demo state with a = b = "v1" at once (no sleep), or
# sets it back to that, and makes its locks optimistic, so the two applies
# of the demo can hold the state together.
#
#   examples/parallel-apply/seed.sh
#
# KL_SERVER (default http://localhost:8080) is the kld; KL the kl command
# (default bin/kl, which `make build` builds, else `go run ./cmd/kl`).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export KL_SERVER=${KL_SERVER:-http://localhost:8080}

"$here/apply.sh" seed -var a=v1 -var b=v1 -var sleep=0

if [ -n "${KL:-}" ]; then
  kl=($KL)
elif [ -x "$root/bin/kl" ]; then
  kl=("$root/bin/kl")
else
  kl=(go -C "$root" run ./cmd/kl)
fi
"${kl[@]}" state config parallel-demo --exclusive-locks=false
