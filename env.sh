# rlstack environment: `source env.sh` (bash or zsh). Every make target sources this file.
#
# It activates the project venv (.venv), makes the venv the ROS prefix when the ROS 2 wheels
# from PyPI are used, overlays the colcon workspace (ros2_ws/install), and applies the
# middleware settings that keep every ROS process on this machine (docs/reference/middleware.md).
# Safe to source twice. It never fails the calling shell: missing pieces print one hint.

# Sourced from a `set -u` shell (make recipes, CI scripts)? The venv's activate script and
# colcon's local_setup.sh read unset variables, so relax -u here and restore it at the end.
case $- in *u*) _rlstack_nounset=1; set +u ;; *) _rlstack_nounset= ;; esac

if [ -n "${BASH_SOURCE:-}" ]; then _rlstack_env="${BASH_SOURCE[0]}"; else _rlstack_env="${(%):-%x}"; fi
export RLSTACK_ROOT="$(cd "$(dirname "$_rlstack_env")" && pwd)"
unset _rlstack_env

if [ -f "$RLSTACK_ROOT/.venv/bin/activate" ]; then
  # shellcheck disable=SC1091
  VIRTUAL_ENV_DISABLE_PROMPT=1 . "$RLSTACK_ROOT/.venv/bin/activate"
  # Wheels mode (no ROS distribution underneath): the venv holds the ROS packages.
  if [ -f "$RLSTACK_ROOT/.venv/.rlstack/mode" ] && [ "$(cat "$RLSTACK_ROOT/.venv/.rlstack/mode")" = wheels ]; then
    case ":${AMENT_PREFIX_PATH:-}:" in
      *":$VIRTUAL_ENV:"*) ;;
      *) export AMENT_PREFIX_PATH="$VIRTUAL_ENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" ;;
    esac
    case ":${CMAKE_PREFIX_PATH:-}:" in
      *":$VIRTUAL_ENV:"*) ;;
      *) export CMAKE_PREFIX_PATH="$VIRTUAL_ENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}" ;;
    esac
  fi
else
  echo "rlstack: no .venv yet (run 'make setup', or 'make test' / 'make demo', which set up first)" >&2
fi

if [ -f "$RLSTACK_ROOT/ros2_ws/install/local_setup.sh" ]; then
  # colcon's local_setup.sh needs COLCON_CURRENT_PREFIX when sourced from elsewhere.
  COLCON_CURRENT_PREFIX="$RLSTACK_ROOT/ros2_ws/install" . "$RLSTACK_ROOT/ros2_ws/install/local_setup.sh"
fi

# Middleware: Fast DDS over shared memory only (config/fastdds_shm_only.xml).
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
export FASTDDS_DEFAULT_PROFILES_FILE="$RLSTACK_ROOT/config/fastdds_shm_only.xml"
# With Fast DDS the SHM-only profile already confines discovery and data to this host.
# ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST would make rmw_fastrtps replace the profile's
# transports with UDPv4 + SHM and open UDP sockets bound to 0.0.0.0 (measured:
# docs/reference/middleware.md), so for Fast DDS the profile chooses the transports. Any
# other RMW gets LOCALHOST, its documented way to stay on this machine.
if [ "$RMW_IMPLEMENTATION" = rmw_fastrtps_cpp ]; then
  export ROS_AUTOMATIC_DISCOVERY_RANGE="${RLSTACK_DISCOVERY_RANGE:-SYSTEM_DEFAULT}"
else
  export ROS_AUTOMATIC_DISCOVERY_RANGE="${RLSTACK_DISCOVERY_RANGE:-LOCALHOST}"
fi
export ROS_STATIC_PEERS=""
# Unbuffered Python so node logs interleave correctly under the runner and in tests.
export PYTHONUNBUFFERED=1

if [ -n "$_rlstack_nounset" ]; then set -u; fi
unset _rlstack_nounset
