#!/usr/bin/env bash
# Restore the warm state of this configuration: the state applying main.tf
# with its defaults gives (time_sleep.slow_a and slow_b at v1, a herd of N
# terraform_data resources), written once by main.go into
# .cache/big-state/ and loaded with kl import, so that `tofu plan
# -refresh=false` right after shows no changes. KL_SERVER names a running
# kld; DATABASE=… (a SQLite path or postgres:// URL) loads it straight into
# a database instead. STATE is the state name (default big-state); the herd
# size and the slow resources' seconds are TF_VAR_herd_size (default 10000)
# and TF_VAR_slow_seconds (default 30), as the CLI reads them; KL is the kl
# binary (default bin/kl), BIG_STATE_CACHE where the file is kept. With
# TF_BIN naming Terraform (TF_BIN=terraform) the state is the one Terraform
# writes: hashicorp/time from registry.terraform.io.
set -euo pipefail
cd "$(dirname "$0")/../.."
state=${STATE:-big-state}
n=${TF_VAR_herd_size:-10000}
seconds=${TF_VAR_slow_seconds:-30}
kl=${KL:-bin/kl}
cache=${BIG_STATE_CACHE:-.cache/big-state}
start=$EPOCHREALTIME
cli=tofu
if [[ -n ${TF_BIN:-} ]] && [[ $(CHECKPOINT_DISABLE=1 "$TF_BIN" version 2>/dev/null) == Terraform* ]]; then
	cli=terraform
fi
# Named by the CLI too: each writes its own layout and key order.
file=$cache/$state-$n-$seconds-$cli.tfstate
if [[ ! -s $file ]]; then
	mkdir -p "$cache"
	go run ./examples/big-state -n "$n" -slow-seconds "$seconds" -cli "$cli" -o "$file"
fi
args=()
if [[ -n ${DATABASE:-} ]]; then
	args=(--database "$DATABASE")
fi
# --force: a demo run before may have left another lineage (or none).
"$kl" ${args[@]+"${args[@]}"} import "$state" "$file" --force
elapsed=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.2f", e - s }')
echo "demo-warm: restored $file into state $state in ${elapsed} s"
