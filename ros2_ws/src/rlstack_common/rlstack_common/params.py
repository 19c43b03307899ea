"""Declare ROS 2 parameters the way rlstack documents them: description, unit, range.

Every parameter of every rlstack node goes through :func:`declare_parameter`, so that
``ros2 param describe`` shows what it means and the middleware itself rejects values outside
the range (a bad YAML value then fails at start with a clear message instead of driving a
robot with garbage).
"""

from __future__ import annotations

from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.node import Node


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
    descriptor = ParameterDescriptor(
        name=name, description=description, read_only=read_only, additional_constraints=constraints)
    if (min_value is None) != (max_value is None):
        raise ValueError(f"parameter '{name}': give both min_value and max_value, or neither")
    if min_value is not None:
        if isinstance(default, bool) or not isinstance(default, (int, float)):
            raise ValueError(f"parameter '{name}': a range needs an int or float default")
        if isinstance(default, int):
            descriptor.integer_range = [IntegerRange(from_value=int(min_value), to_value=int(max_value), step=0)]
        else:
            descriptor.floating_point_range = [
                FloatingPointRange(from_value=float(min_value), to_value=float(max_value), step=0.0)]
    return node.declare_parameter(name, default, descriptor).value
