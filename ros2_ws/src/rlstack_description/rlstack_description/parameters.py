"""The parameter table of robot_state_publisher (pure Python, no rclpy).

The node declares it with ``rlstack_common.param_table.declare_all``; docs/reference/robot-description.md
is generated from it.
"""

from __future__ import annotations

from typing import List

from rlstack_common.param_table import Param as P

__all__ = ["ROBOT_STATE_PUBLISHER"]

ROBOT_STATE_PUBLISHER: List[P] = [
    P("robot_description", "", "the robot's URDF as text; empty: read it from urdf_file. Published unchanged on "
      "/robot_description (latched)"),
    P("urdf_file", "", "URDF file read when robot_description is empty [path]; empty: the installed "
      "share/rlstack_description/urdf/mobile_manipulator.urdf", constraints="an existing file, or empty"),
    P("publish_frequency", 20.0, "most /tf messages per second for one joint [Hz]: a /joint_states message sooner "
      "than 1/publish_frequency after the last one published for that joint is skipped", 0.1, 1000.0),
    P("frame_prefix", "", "prefix put in front of every frame name in /tf and /tf_static (e.g. 'robot1/')"),
    P("publish_tf", True, "publish the links' transforms (/tf_static for fixed joints, /tf for moving ones from "
      "/joint_states); false: only /robot_description, for a graph where another node already publishes every link "
      "(the simulator bridge does)"),
    P("diagnostics_rate_hz", 1.0, "/diagnostics messages per second (steady clock) [Hz]", 0.1, 100.0),
]
