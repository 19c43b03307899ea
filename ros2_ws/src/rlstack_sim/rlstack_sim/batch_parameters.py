"""The parameter table of ``batch_bridge`` (:mod:`rlstack_sim.batch_bridge`; pure Python, no rclpy).

The node declares :func:`batch_bridge_parameters` with ``rlstack_common.param_table.declare_all``;
``launch/params/batch_bridge.yaml`` and the table in docs/reference/sim-bridge.md are checked against
(generated from) it.
"""

from __future__ import annotations

from typing import List, Sequence

from rlstack_common.param_table import Param as P
from rlstack_sim.batch import MAX_ENVS

__all__ = ["batch_bridge_parameters"]


def batch_bridge_parameters(scenes: Sequence[str], backends: Sequence[str]) -> List[P]:
    """The parameters, for a build whose scenes and backends are ``scenes`` and ``backends``."""
    return [
        P("scene", "cartpole", "Scene every env loads", constraints="one of: " + ", ".join(scenes)),
        P("backend", "pybullet", "Simulator backend", constraints="one of: " + ", ".join(backends)),
        P("num_envs", 8, "Simulator instances (envs) stepped per call", 1, MAX_ENVS),
        P("seed", 0, "Seed of the initial reset; env i starts from seed + i", 0, 2**31 - 1 - MAX_ENVS),
        P("physics_rate_hz", 240.0, "Physics integration rate, Hz", 1.0, 10000.0),
        P("control_rate_hz", 60.0, "Control rate, Hz; must divide physics_rate_hz", 1.0, 10000.0),
        P("command_timeout_s", 0.5, "Command watchdog per env, s of sim time (0: off)", 0.0, 3600.0),
        P("max_linear_speed", 1.0, "Base |linear.x| limit, m/s", 0.0, 100.0),
        P("max_angular_speed", 2.0, "Base |angular.z| limit, rad/s", 0.0, 100.0),
        P("max_linear_accel", 1.0, "Base linear acceleration limit, m/s^2 (0: none)", 0.0, 1000.0),
        P("max_angular_accel", 3.0, "Base angular acceleration limit, rad/s^2 (0: none)", 0.0, 1000.0),
        P("max_ee_step", 0.05, "Longest end-effector delta per command, m", 0.001, 1.0),
        P("with_objects", True, "Put the ground-truth objects' poses in every ~/step response (false: joint states "
          "only, for tasks that read no object; saves ~30 % of a cart-pole call)"),
        P("reset_mode", "rebuild", "PyBullet's reset: rebuild (bitwise like a fresh world, ~3 ms for cartpole) or "
          "snapshot (a saved state restored, sub-millisecond; exact for contact-free scenes such as cartpole)",
          constraints="one of: rebuild, snapshot"),
    ]
