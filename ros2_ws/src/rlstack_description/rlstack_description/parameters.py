"""Every robot_state_publisher parameter: name, default, unit, range, meaning (pure; no rclpy).

The names and meanings are upstream robot_state_publisher's, plus ``urdf_file`` (where the URDF
comes from when ``robot_description`` is empty) and ``publish_tf``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional


@dataclass(frozen=True)
class Param:
    name: str
    default: Any
    unit: str
    description: str
    min_value: Optional[float] = None
    max_value: Optional[float] = None
    constraints: str = ""

    @property
    def help(self) -> str:
        return f"{self.description} [{self.unit}]" if self.unit else self.description


def _p(name, default, unit, description, lo=None, hi=None, constraints=""):
    return Param(name, default, unit, description, lo, hi, constraints)


#: default of ``urdf_file``: the installed share file (filled in by the node; empty here keeps the core pure)
DEFAULT_URDF = "urdf/mobile_manipulator.urdf"

PARAMS: List[Param] = [
    _p("robot_description", "", "", "the robot's URDF as text; empty: read it from urdf_file. Published "
       "unchanged on /robot_description (latched)"),
    _p("urdf_file", "", "path", "URDF file read when robot_description is empty; empty: the installed "
       "rlstack_description share/" + DEFAULT_URDF, constraints="existing file"),
    _p("publish_frequency", 20.0, "Hz", "most /tf messages per second for one joint (a /joint_states message "
       "sooner than 1/publish_frequency after the last one published for that joint is skipped)", 0.1, 1000.0),
    _p("frame_prefix", "", "", "prefix put in front of every frame name in /tf and /tf_static (e.g. 'robot1/')"),
    _p("publish_tf", True, "", "publish the links' transforms (/tf_static for fixed joints, /tf for moving ones "
       "from /joint_states); false: publish only /robot_description, for a graph where another node "
       "already publishes every link (the simulator bridge does)"),
]
