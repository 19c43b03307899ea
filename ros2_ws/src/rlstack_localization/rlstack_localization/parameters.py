"""The parameter table of the localizer node (pure Python, no rclpy).

The node's own parameters (topics, frames, rates, the initial pose) followed by one parameter per
:class:`LocalizerParams` field, described in :data:`rlstack_localization.node_core.CORE_PARAMS` with
the dataclass's default. The node declares the table with ``rlstack_common.param_table.declare_all``;
``launch/params/localizer.yaml`` and docs/reference/localization.md are checked against (generated
from) it.
"""

from __future__ import annotations

import math
from typing import List

from rlstack_common.param_table import Param as P
from rlstack_localization.core import LocalizerParams
from rlstack_localization.node_core import CORE_PARAMS

__all__ = ["LOCALIZER"]


def _core_params() -> List[P]:
    defaults = LocalizerParams()
    out = []
    for name, (desc, lo, hi) in CORE_PARAMS.items():
        default = getattr(defaults, name)
        if isinstance(default, bool):
            out.append(P(name, default, desc))
        elif isinstance(default, int):
            out.append(P(name, int(default), desc, int(lo), int(hi)))
        else:
            out.append(P(name, float(default), desc, float(lo), float(hi)))
    return out


LOCALIZER: List[P] = [
    P("map_yaml", "", "map_server YAML of the occupancy map to localise against"),
    P("map_frame", "map", "Map frame (the parent of map -> odom)"),
    P("odom_frame", "odom", "Odometry frame"),
    P("base_frame", "base_link", "Robot base frame"),
    P("odom_topic", "/odom", "Wheel odometry topic (nav_msgs/Odometry)"),
    P("depth_topic", "/head_camera/depth/image_raw", "Depth image topic (32FC1, metres)"),
    P("camera_info_topic", "/head_camera/camera_info", "CameraInfo of the depth image"),
    P("state_topic", "/localization/state", "Localisation state topic (std_msgs/String, latched)"),
    P("update_rate_hz", 10.0, "Depth frames processed per second of frame time (at most)", 0.1, 100.0),
    P("publish_rate_hz", 20.0, "Rate of map -> odom on /tf, Hz (steady clock)", 1.0, 200.0),
    P("transform_tolerance_s", 0.1, "map -> odom is stamped this far after the latest odometry (AMCL's "
      "transform_tolerance)", 0.0, 10.0),
    P("diagnostics_rate_hz", 1.0, "Rate of /diagnostics, Hz", 0.1, 50.0),
    P("set_initial_pose", True, "Start from initial_pose_* (else wait for /initialpose)"),
    P("initial_pose_x", 0.0, "Initial base_link x in map, m", -10000.0, 10000.0),
    P("initial_pose_y", 0.0, "Initial base_link y in map, m", -10000.0, 10000.0),
    P("initial_pose_yaw", 0.0, "Initial base_link yaw in map, rad", -math.pi, math.pi),
    P("last_pose_file", "", "File keeping the last map -> odom (every last_pose_period_s while OK or DEGRADED; "
      "removed at a clean shutdown): a localiser respawned after a crash starts from it instead of initial_pose_* "
      "('': off)"),
    P("last_pose_max_age_s", 60.0, "A last_pose_file older than this is not used, s (wall)", 0.0, 1000000.0),
    P("last_pose_period_s", 1.0, "Write last_pose_file this often, s (steady clock)", 0.05, 3600.0),
] + _core_params()
