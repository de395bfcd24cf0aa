#!/usr/bin/env bash
# Prints the -ldflags that stamp internal/buildinfo with the version and
# commit of the checkout and the build date (UTC), for:
#
#   go build -ldflags "$(scripts/version.sh)" ./cmd/kld
#
# The version follows internal/buildinfo.FromDescribe (its tests run this
# script against it):
#   HEAD tagged vX.Y.Z               -> X.Y.Z
#   N commits after tag vX.Y.Z       -> X.Y.(Z+1)-dev.N
#   N commits after tag vX.Y.Z-pre   -> X.Y.Z-pre.dev.N
#   no tag reachable                 -> 0.1.0-dev.N  (N = commits in HEAD's history)
# It works with no tags, on a shallow clone (where N counts only the fetched
# history) and outside git (0.1.0-dev.0, commit "unknown").
set -euo pipefail
cd "$(dirname "$0")/.."

pkg=github.com/kilolock/kilolock/internal/buildinfo
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

version=""
if describe=$(git describe --tags --long --match 'v[0-9]*' 2>/dev/null); then
  # vX.Y.Z[-pre]-N-gHASH
  rest=${describe%-g*}
  n=${rest##*-}
  tag=${rest%-*}
  base=${tag#v}
  core=${base%%-*}
  if [[ $core =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
    if [ "$n" = 0 ]; then
      version=$base
    elif [ "$core" != "$base" ]; then
      version="$base.dev.$n"
    else
      version="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.$((BASH_REMATCH[3] + 1))-dev.$n"
    fi
  fi
fi
if [ -z "$version" ]; then
  n=$(git rev-list --count HEAD 2>/dev/null || echo 0)
  version="0.1.0-dev.$n"
fi

date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

echo "-X $pkg.Version=$version -X $pkg.Commit=$commit -X $pkg.Date=$date"
