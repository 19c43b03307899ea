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
# A graph spanning machines: the user's Fast DDS profile replaces the shared-memory-only one
# (docker/fastdds_robot_lan.xml; docs/guides/deploy-on-a-robot.md "DDS between machines").
if [ -n "${RLSTACK_FASTDDS_PROFILE:-}" ]; then
  if [ ! -f "$RLSTACK_FASTDDS_PROFILE" ]; then
    echo "rlstack: RLSTACK_FASTDDS_PROFILE=$RLSTACK_FASTDDS_PROFILE is not a file in the container (mount it)" >&2
    exit 2
  fi
  export FASTDDS_DEFAULT_PROFILES_FILE="$RLSTACK_FASTDDS_PROFILE"
fi
[ "$#" -gt 0 ] || set -- bash
exec "$@"
