#!/usr/bin/env bash
# make docker: build the rlstack images (docker/Dockerfile) and print their sizes and build times.
#   docker/build.sh [sim] [robot]         default: both
# Settings (environment, make variables, or docker/site.env, which `make docker-base` writes):
#   BASE_IMAGE       Python 3.11 base (default python:3.11-slim-bookworm, the official image)
#   WHEELHOUSE       a folder of extra wheels offered to pip in the build (default: the host's
#                    PIP_FIND_LINKS when it is a folder); a torch wheel there replaces PyTorch's index
#   TORCH_INDEX_URL  where the CPU torch comes from (default https://download.pytorch.org/whl/cpu)
#   IMAGE_PREFIX     image names: <prefix>:sim, <prefix>:robot (default rlstack)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
. docker/lib.sh
# shellcheck disable=SC1091
# docker/site.env (make docker-base writes it): this machine's defaults; the environment and
# make variables win over it.
if [ -f docker/site.env ]; then
  while IFS='=' read -r key value; do
    case "$key" in ''|\#*) continue ;; esac
    [ -n "${!key+x}" ] || export "$key=$value"
  done <docker/site.env
fi
BASE_IMAGE="${BASE_IMAGE:-python:3.11-slim-bookworm}"
IMAGE_PREFIX="${IMAGE_PREFIX:-rlstack}"
if [ -z "${WHEELHOUSE+x}" ] && [ -d "${PIP_FIND_LINKS:-}" ]; then WHEELHOUSE="$PIP_FIND_LINKS"; fi
WHEELHOUSE="${WHEELHOUSE:-}"
TARGETS=("$@"); [ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(sim robot)

say() { printf '[docker] %s\n' "$*"; }
docker_ready
base_ready "$BASE_IMAGE"

# Extra wheels into the build context (hard links where possible; ignored by git).
rm -f docker/wheelhouse/*.whl
if [ -n "$WHEELHOUSE" ]; then
  [ -d "$WHEELHOUSE" ] || docker_die "WHEELHOUSE '$WHEELHOUSE' is not a folder"
  shopt -s nullglob
  for w in "$WHEELHOUSE"/*.whl; do ln -f "$w" docker/wheelhouse/ 2>/dev/null || cp "$w" docker/wheelhouse/; done
  shopt -u nullglob
fi
# Extra CA certificates for the build (an HTTPS-intercepting proxy's), default: the host's local ones.
EXTRA_CA_DIR="${EXTRA_CA_DIR-/usr/local/share/ca-certificates}"
rm -f docker/certs/*.crt
if [ -n "$EXTRA_CA_DIR" ] && [ -d "$EXTRA_CA_DIR" ]; then
  find "$EXTRA_CA_DIR" -maxdepth 2 -name '*.crt' -exec cp {} docker/certs/ \;
fi
if [ -z "${TORCH_INDEX_URL+x}" ]; then
  if compgen -G 'docker/wheelhouse/torch-*.whl' >/dev/null; then TORCH_INDEX_URL=""; else TORCH_INDEX_URL="https://download.pytorch.org/whl/cpu"; fi
fi

# BuildKit where the buildx plugin is installed (it builds only the stages a target needs);
# otherwise the classic builder, which every Docker Engine has.
if docker buildx version >/dev/null 2>&1; then export DOCKER_BUILDKIT=1; else export DOCKER_BUILDKIT=0; fi

mkdir -p out/docker
say "base image: $BASE_IMAGE; extra CA certificates: $(find docker/certs -name '*.crt' | wc -l) (from ${EXTRA_CA_DIR:-none})"
say "torch from: ${TORCH_INDEX_URL:-docker/wheelhouse ($(ls docker/wheelhouse | grep -c '\.whl$' || true) wheels from $WHEELHOUSE)}"
for t in "${TARGETS[@]}"; do
  case "$t" in
    sim) stage=runtime ;;
    robot) stage=robot ;;
    *) docker_die "unknown image '$t' (sim or robot)" ;;
  esac
  tag="$IMAGE_PREFIX:$t"; log="out/docker/build-$t.log"
  say "building $tag (stage '$stage'; log: $log)"
  start=$(date +%s)
  if ! docker build --network host -f docker/Dockerfile --target "$stage" \
        --build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg TORCH_INDEX_URL="$TORCH_INDEX_URL" \
        -t "$tag" . >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    docker_die "building $tag failed (full log: $log)"
  fi
  secs=$(( $(date +%s) - start ))
  size=$(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.2f GB", $1/1e9}')
  say "built $tag in ${secs} s: $size"
  printf '%s\t%s\t%s\t%s\n' "$tag" "$secs" "$size" "$BASE_IMAGE" >>out/docker/builds.tsv
done
rm -f docker/wheelhouse/*.whl docker/certs/*.crt
