"""Declare ROS 2 parameters the way rlstack documents them: description, unit, range.

Nodes declare their parameters from one table (:mod:`rlstack_common.param_table`,
``declare_all``); :func:`declare_parameter` declares a single one the same way, so that
``ros2 param describe`` shows what it means and the middleware itself rejects values outside
the range (a bad YAML value then fails at start with a clear message instead of driving a
robot with garbage).
"""

from __future__ import annotations

from typing import Any

from rclpy.node import Node

from rlstack_common.param_table import Param, descriptor


def declare_parameter(
    node: Node,
    name: str,
    default: Any,
    description: str,
    *,
    min_value: float | int | None = None,
    max_value: float | int | None = None,
    read_only: bool = False,
    constraints: str = "",
) -> Any:
    """Declare ``name`` with a descriptor and return its value.

    Ranges apply to int and float parameters: ``min_value``/``max_value`` both or neither.
    ``constraints`` is free text shown to users (e.g. "one of: twist, twist_stamped").
    """
    p = Param(name, default, description, min_value, max_value, constraints, read_only=read_only)
    return node.declare_parameter(name, default, descriptor(p)).value
