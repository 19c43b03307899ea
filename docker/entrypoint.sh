#!/usr/bin/env bash
# rlstack container entrypoint: source env.sh (venv, workspace overlay, middleware settings),
# then run the command (default: the image's CMD). With the official ROS images the
# distribution is sourced first, as on a workstation (the "sourced distribution" setup mode).
set -e
if [ -n "${ROS_DISTRO:-}" ] && [ -f "/opt/ros/${ROS_DISTRO}/setup.bash" ]; then
  # shellcheck disable=SC1090
  . "/opt/ros/${ROS_DISTRO}/setup.bash"
fi
# shellcheck disable=SC1091
. /opt/rlstack/env.sh
[ "$#" -gt 0 ] || set -- bash
exec "$@"
