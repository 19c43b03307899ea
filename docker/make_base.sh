#!/usr/bin/env bash
# Build a local Debian bookworm base image from Debian's own packages, for machines that
# cannot reach Docker Hub (the project machines): debootstrap --variant=minbase + docker import.
# Usage: docker/make_base.sh [image name, default rlstack-base:bookworm] [Debian mirror]
# The mirror defaults to the first one in this machine's apt sources. Writes docker/site.env so
# that `make docker` uses the image (delete docker/site.env to go back to the official base).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME="${1:-rlstack-base:bookworm}"
die() { printf 'docker-base: error: %s\n' "$*" >&2; exit 1; }

command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
[ "$(id -u)" = 0 ] || die "debootstrap needs root: run 'sudo make docker-base'"
. "$ROOT/docker/lib.sh"
docker_ready

MIRROR="${2:-}"
if [ -z "$MIRROR" ]; then
  MIRROR="$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
            | grep -v security | awk 'NR==1{print $2}' || true)"
  MIRROR="${MIRROR:-http://deb.debian.org/debian}"
fi
ROOTFS="$(mktemp -d /tmp/rlstack-rootfs.XXXXXX)"
trap 'rm -rf "$ROOTFS"' EXIT
printf '[docker-base] debootstrap --variant=minbase bookworm from %s\n' "$MIRROR"
start=$(date +%s)
nice -n 19 debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >/tmp/rlstack-debootstrap.log 2>&1 \
  || { tail -n 5 /tmp/rlstack-debootstrap.log >&2; die "debootstrap failed (log: /tmp/rlstack-debootstrap.log); check the mirror '$MIRROR'"; }
# The image's apt must reach the same mirror, plus the security updates.
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$MIRROR" "$MIRROR" >"$ROOTFS/etc/apt/sources.list"
case "$MIRROR" in */debian|*/debian/)
  printf 'deb %s-security bookworm-security main\n' "${MIRROR%/}" >>"$ROOTFS/etc/apt/sources.list" ;;
esac
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
tar -C "$ROOTFS" -c . | docker import - "$NAME" >/dev/null
printf '[docker-base] %s imported (%s, %d s)\n' "$NAME" \
  "$(docker image inspect -f '{{.Size}}' "$NAME" | awk '{printf "%.0f MB", $1/1e6}')" "$(( $(date +%s) - start ))"
printf '# Written by docker/make_base.sh: this machine builds on a local base (no Docker Hub).\nBASE_IMAGE=%s\n' "$NAME" >"$ROOT/docker/site.env"
printf '[docker-base] wrote docker/site.env (BASE_IMAGE=%s)\n' "$NAME"
