"""The parameter table of ``ground_truth_grasp_target`` (:mod:`rlstack_sim.ground_truth_grasp_target`;
pure Python, no rclpy).

The node declares :data:`GROUND_TRUTH_GRASP_TARGET` with ``rlstack_common.param_table.declare_all``;
``launch/params/ground_truth_grasp_target.yaml`` and the table in docs/reference/sim-bridge.md are
checked against (generated from) it.
"""

from __future__ import annotations

from typing import List

from rlstack_common.param_table import Param as P

__all__ = ["GROUND_TRUTH_GRASP_TARGET"]

GROUND_TRUTH_GRASP_TARGET: List[P] = [
    P("target_match_radius", 0.3, "Requested point -> ground-truth object match radius, m", 0.01, 5.0),
    P("rate_hz", 40.0, "/grasp_target rate while a request stands (twice the lift's 20 Hz), Hz", 1.0, 200.0),
    P("base_frame", "base_link", "Frame of the published grasp target (the robot's base)"),
]
