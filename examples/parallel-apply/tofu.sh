# Sourced by the demo's scripts: sets tofu to the OpenTofu CLI to run, the
# first of $TOFU, the pinned one `make tofu` builds (.cache/tofu/bin/tofu),
# and tofu in PATH; empty when there is none. $root is the repository.
tofu=${TOFU:-}
if [ -z "$tofu" ] && [ -x "$root/.cache/tofu/bin/tofu" ]; then
  tofu=$root/.cache/tofu/bin/tofu
fi
if [ -z "$tofu" ]; then
  tofu=$(command -v tofu || true)
fi
