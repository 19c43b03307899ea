"""The sim_bridge's parameters declared from their table and checked together (no algorithm).

The table is :func:`rlstack_sim.parameters.bridge_parameters` (one entry per parameter: name,
default, description, range); :func:`declare_bridge` declares it on the node through
``rlstack_common.param_table.declare_all`` (descriptors with the ranges, so rclpy refuses an
out-of-range value) and :func:`check_values` refuses the combinations no range can express.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rlstack_common.param_table import Values, declare_all
from rlstack_sim.config import MODES, ConfigError, check_choice, steps_per_control
from rlstack_sim.parameters import bridge_parameters

__all__ = ["check_values", "declare_bridge"]


def check_values(v: Mapping[str, Any], scenes: Sequence[str], backends: Sequence[str]) -> None:
    """ConfigError (one line for the user) for an unknown scene, backend or mode, the wall clock outside
    realtime mode, a control rate that does not divide the physics rate, an empty ground-truth namespace."""
    check_choice("scene", v["scene"], scenes)
    check_choice("backend", v["backend"], backends)
    check_choice("mode", v["mode"], MODES)
    if v["wall_clock"] and v["mode"] != "realtime":
        raise ConfigError(f"wall_clock needs mode realtime, got mode {v['mode']!r}: only real time keeps pace "
                          "with the system clock")
    steps_per_control(v["physics_rate_hz"], v["control_rate_hz"])
    if not v["ground_truth_namespace"].strip("/"):
        raise ConfigError("ground_truth_namespace must not be empty")


def declare_bridge(node: Any, scenes: Sequence[str], backends: Sequence[str]) -> Values:
    """Declare every bridge parameter on ``node`` and return the values, checked (ConfigError)."""
    v = declare_all(node, bridge_parameters(scenes, backends))
    check_values(v, scenes, backends)
    return v
