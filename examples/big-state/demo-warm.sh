#!/usr/bin/env bash
# Generate the 10,000-instance state (once) and load it with kl import.
# KL_SERVER names a running kld; KL_DATABASE_URL (or DATABASE=…) loads it
# straight into a database instead. STATE is the state name (default big).
set -euo pipefail
cd "$(dirname "$0")/../.."
file=examples/big-state/big.tfstate
state=${STATE:-big}
kl=${KL:-bin/kl}
if [[ ! -s $file ]]; then
	go run ./examples/big-state -n "${N:-10000}" -o "$file"
fi
args=()
if [[ -n ${DATABASE:-} ]]; then
	args=(--database "$DATABASE")
fi
start=$(date +%s%N)
"$kl" ${args[@]+"${args[@]}"} import "$state" "$file" --force
ms=$((($(date +%s%N) - start) / 1000000))
printf 'demo-warm: loaded %s into state %s in %d.%03d s\n' "$file" "$state" $((ms / 1000)) $((ms % 1000))
