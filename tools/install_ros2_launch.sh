#!/usr/bin/env bash
# Install ROS 2's own `ros2 launch` and ros2cli (launch, launch_yaml, launch_xml, launch_ros,
# ros2launch, ros2cli, ros2topic, ros2param, ros2action, ros2service, ros2node, ros2run, ros2pkg,
# rosidl_runtime_py, composition_interfaces) into PREFIX, from source checkouts, over the
# project's environment (wheels mode: no ROS distribution underneath). A check tool: it lets
# tools/check_launch_upstream.py compare the project's launch files with upstream's parser.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: tools/install_ros2_launch.sh SRC_DIR PREFIX

SRC_DIR holds checkouts (any branch matching your rclpy; rolling works with the wheels) of
  SRC_DIR/launch             github.com/ros2/launch
  SRC_DIR/launch_ros         github.com/ros2/launch_ros
  SRC_DIR/ros2cli            github.com/ros2/ros2cli
  SRC_DIR/rosidl_runtime_py  github.com/ros2/rosidl_runtime_py
  SRC_DIR/rcl_interfaces     github.com/ros2/rcl_interfaces
Nothing is downloaded from GitHub; osrf_pycommon and psutil come from the package index pip uses.

PREFIX (outside the repository) receives bin/ros2, lib/pythonX.Y/site-packages, the ament
index, ws/install (composition_interfaces, built with colcon) and env.sh. Then:

  source env.sh && source PREFIX/env.sh
  ros2 launch launch/smoke.launch.yaml --show-args
  python tools/check_launch_upstream.py
EOF
}

case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
SRC="$(cd "$1" && pwd)"
mkdir -p "$2"
PREFIX="$(cd "$2" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "$PREFIX/" in "$ROOT"/*) echo "install_ros2_launch: PREFIX must be outside the repository" >&2; exit 2 ;; esac

PKGS=(
  launch/launch launch/launch_yaml launch/launch_xml
  launch_ros/launch_ros launch_ros/ros2launch
  ros2cli/ros2cli ros2cli/ros2topic ros2cli/ros2param ros2cli/ros2action ros2cli/ros2service
  ros2cli/ros2node ros2cli/ros2run ros2cli/ros2pkg
  rosidl_runtime_py
)
for pkg in "${PKGS[@]}" rcl_interfaces/composition_interfaces; do
  [ -f "$SRC/$pkg/package.xml" ] || { echo "install_ros2_launch: no $SRC/$pkg/package.xml (see --help)" >&2; exit 2; }
done

# shellcheck disable=SC1091
. "$ROOT/env.sh"
PY="$(command -v python)"

for pkg in "${PKGS[@]}"; do
  echo "[install_ros2_launch] pip install $pkg"
  "$PY" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
    --prefix "$PREFIX" "$SRC/$pkg"
done
echo "[install_ros2_launch] pip install osrf_pycommon psutil"
"$PY" -m pip install -q --disable-pip-version-check --no-deps --prefix "$PREFIX" osrf_pycommon psutil

echo "[install_ros2_launch] colcon build composition_interfaces (log: $PREFIX/ws/log)"
mkdir -p "$PREFIX/ws"
(cd "$PREFIX/ws" && colcon --log-base log build --build-base build --install-base install \
  --base-paths "$SRC/rcl_interfaces/composition_interfaces" \
  --cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$PY" \
  --event-handlers console_cohesion- console_start_end- summary+ status-)

cat >"$PREFIX/env.sh" <<'EOF'
# ROS 2's own launch / ros2cli over the rlstack environment.
# Use: source <repo>/env.sh && source <this file>
_up="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
_pyver="$(python3 -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')"
if [ -f "$_up/ws/install/local_setup.sh" ]; then
  COLCON_CURRENT_PREFIX="$_up/ws/install" . "$_up/ws/install/local_setup.sh"
fi
case ":$PATH:" in *":$_up/bin:"*) ;; *) export PATH="$_up/bin:$PATH" ;; esac
case ":${PYTHONPATH:-}:" in *":$_up/lib/$_pyver/site-packages:"*) ;;
  *) export PYTHONPATH="$_up/lib/$_pyver/site-packages${PYTHONPATH:+:$PYTHONPATH}" ;; esac
case ":${AMENT_PREFIX_PATH:-}:" in *":$_up:"*) ;;
  *) export AMENT_PREFIX_PATH="$_up${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" ;; esac
export ROS_DISTRO="${ROS_DISTRO:-rolling}"
unset _up _pyver
EOF

set +u  # colcon's local_setup.sh reads unset variables
# shellcheck disable=SC1091
. "$PREFIX/env.sh"
set -u
ros2 launch --help >/dev/null
echo "[install_ros2_launch] done: source $ROOT/env.sh && source $PREFIX/env.sh"
