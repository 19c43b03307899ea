# Shared by docker/*.sh: checks that print one clear line saying what to do, and exit non-zero.
# shellcheck shell=bash

docker_die() { printf 'rlstack docker: error: %s\n' "$*" >&2; exit 1; }

# Docker installed, its daemon running, and this user allowed on its socket.
docker_ready() {
  command -v docker >/dev/null 2>&1 \
    || docker_die "docker is not installed: install Docker Engine (Debian/Ubuntu: apt-get install docker.io), start it, and retry"
  local err
  if ! err="$(docker version --format '{{.Server.Version}}' 2>&1 >/dev/null)"; then
    case "$err" in
      *"permission denied"*)
        docker_die "no permission on the Docker socket: add yourself to the 'docker' group (sudo usermod -aG docker \$USER, then log in again) or run with sudo" ;;
      *"Cannot connect"*|*"Is the docker daemon running"*|*"no such file"*|*"connection refused"*)
        docker_die "the Docker daemon is not running: start it (sudo systemctl start docker; without systemd: sudo dockerd --bridge=none --iptables=false &) and retry" ;;
      *)
        docker_die "docker does not answer: $(printf '%s' "$err" | head -n1)" ;;
    esac
  fi
}

# The base image is here, or can be pulled; else say how to get one.
base_ready() {
  local image="$1"
  docker image inspect "$image" >/dev/null 2>&1 && return 0
  printf '[docker] pulling base image %s\n' "$image"
  docker pull "$image" >/tmp/rlstack-docker-pull.log 2>&1 && return 0
  docker_die "base image '$image' cannot be pulled ($(tail -n1 /tmp/rlstack-docker-pull.log | cut -c1-120)): without Docker Hub run 'make docker-base' (a local Debian bookworm base from debootstrap), or pass BASE_IMAGE=<an image you have>"
}
