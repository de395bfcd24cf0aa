#!/usr/bin/env bash
# Builds the OCI image kilolock:VERSION (VERSION as scripts/version.sh
# stamps it) from deploy/image/Containerfile, FROM scratch: static kld and
# kl (CGO off; the SQLite store is pure Go), this machine's CA certificates
# and zoneinfo, the user 65532, /data as the volume. Nothing is pulled, so
# it works offline. It prints the image's name on its last line.
#
#   bash scripts/image.sh            # what `make image` runs
#
# The engine is podman where it answers (`podman info`), else docker where
# an engine answers (`docker info`: a docker client with no daemon is not
# one). A podman whose configured storage driver does not work here (overlay
# inside some containers) is retried with the vfs driver (STORAGE_DRIVER).
# CONTAINER_ENGINE=podman or docker picks one.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'image: %s\n' "$*" >&2; }
die() { printf 'image: %s\n' "$*" >&2; exit 1; }

engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then
  if command -v podman >/dev/null && podman info >/dev/null 2>&1; then
    engine=podman
  elif command -v podman >/dev/null && STORAGE_DRIVER=vfs podman info >/dev/null 2>&1; then
    export STORAGE_DRIVER=vfs
    engine=podman
  elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    engine=docker
  else
    die "no container engine answers: install podman (apt-get install podman) or start docker's daemon"
  fi
fi

ldflags=$(bash scripts/version.sh)
version=$(sed -n 's/.*buildinfo\.Version=\([^ ]*\).*/\1/p' <<<"$ldflags")
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
created=$(sed -n 's/.*buildinfo\.Date=\([^ ]*\).*/\1/p' <<<"$ldflags")
tag="kilolock:$version"

# The build context: a root file system staged here, rebuilt each time
# (the Go build cache keeps the compile fast).
ctx=.cache/image
rm -rf "$ctx"
mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/etc/ssl/certs" "$ctx/rootfs/usr/share" "$ctx/rootfs/tmp" "$ctx/data"

log "building static kld and kl ($version)"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags -s -w" -o "$ctx/rootfs/usr/local/bin/" ./cmd/kld ./cmd/kl

# The CA bundle where Go looks first on Linux; the build machine's own,
# wherever its distribution keeps it.
ca=""
for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/ca-bundle.pem /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem /etc/ssl/cert.pem; do
  if [ -s "$f" ]; then ca=$f; break; fi
done
[ -n "$ca" ] || die "no CA certificates on this machine: install them (apt-get install ca-certificates)"
cp "$ca" "$ctx/rootfs/etc/ssl/certs/ca-certificates.crt"

zoneinfo=${ZONEINFO:-/usr/share/zoneinfo}
[ -f "$zoneinfo/UTC" ] || die "no zoneinfo at $zoneinfo: install it (apt-get install tzdata)"
cp -a "$zoneinfo" "$ctx/rootfs/usr/share/zoneinfo"
# Links out of the tree (localtime -> /etc/localtime) would dangle.
find "$ctx/rootfs/usr/share/zoneinfo" -type l -lname '/*' -delete

cat >"$ctx/rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
kilolock:x:65532:65532:KiloLock:/data:/sbin/nologin
EOF
cat >"$ctx/rootfs/etc/group" <<'EOF'
root:x:0:
kilolock:x:65532:
EOF
# kld spools large bodies to the temporary directory.
chmod 1777 "$ctx/rootfs/tmp"
chmod 0755 "$ctx/rootfs" "$ctx/rootfs/etc" "$ctx/rootfs/usr" "$ctx/rootfs/usr/local" "$ctx/rootfs/usr/local/bin"
chmod 0700 "$ctx/data"

log "building $tag with $engine${STORAGE_DRIVER:+ (storage driver $STORAGE_DRIVER)}"
"$engine" build --quiet \
  --file deploy/image/Containerfile \
  --build-arg "VERSION=$version" \
  --build-arg "REVISION=$revision" \
  --build-arg "CREATED=$created" \
  --tag "$tag" \
  "$ctx" >&2
echo "$tag"
