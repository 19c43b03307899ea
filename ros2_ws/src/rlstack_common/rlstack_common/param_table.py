"""One declarative parameter table per node: name, type, default, range, unit, description.

A node's parameters are a list of :class:`Param` in a small ``parameters`` module of its package
(pure Python: importing a table starts nothing and needs no rclpy). From that one table

- the node declares them (:func:`declare_all`: each with a ``ParameterDescriptor`` carrying the
  description, ``additional_constraints`` and a ``FloatingPointRange``/``IntegerRange``, so the
  middleware refuses an out-of-range value at start and ``ros2 param describe`` explains it),
- ``tools/gen_reference.py`` writes the parameter tables of ``docs/reference/``,
- ``tests/test_param_tables.py`` checks the params YAML files of ``launch/params/`` against it
  (:func:`check_values`: every key declared, of the declared type, inside the range).

The type of a parameter is the type of its default (ROS 2 parameters are statically typed:
a YAML ``1`` for a float parameter is refused). A table element may be any object with the
attributes ``name, default, description, min_value, max_value, constraints`` (``unit`` and
``read_only`` are optional), so older per-package ``Param`` classes with these fields work too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

__all__ = ["Param", "Values", "check_table", "check_values", "declare_all", "descriptor", "differences",
           "help_text", "load_params_yaml", "type_name"]


@dataclass(frozen=True)
class Param:
    """One parameter. ``min_value``/``max_value``: both or neither, for int and float parameters;
    ``constraints``: free text for users (``one of: a, b``); ``unit`` is appended to the description
    in ``ros2 param describe`` and the docs (``[m/s]``)."""

    name: str
    default: Any
    description: str
    min_value: Optional[float] = None
    max_value: Optional[float] = None
    constraints: str = ""
    unit: str = ""
    read_only: bool = False

    def __post_init__(self) -> None:
        problems = _range_problems(self)
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def type(self) -> type:
        return _ptype(self.default)

    @property
    def help(self) -> str:
        return help_text(self)


class Values(dict):
    """The declared values by name; also readable as attributes (``v.rate_hz``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _ptype(value: Any) -> type:
    return list if isinstance(value, (list, tuple)) else type(value)


def type_name(value: Any) -> str:
    """The ROS 2 parameter type of a value: bool, integer, double, string, or an array of one of them."""
    if isinstance(value, (list, tuple)):
        inner = {type_name(v) for v in value}
        return f"{inner.pop()}_array" if len(inner) == 1 else "array"
    return {bool: "bool", int: "integer", float: "double", str: "string"}.get(type(value), type(value).__name__)


def help_text(p: Any) -> str:
    """The description with the unit appended (``Cruise speed [m/s]``), as shown to users."""
    unit = getattr(p, "unit", "")
    return f"{p.description} [{unit}]" if unit else p.description


def _range_problems(p: Any) -> List[str]:
    out = []
    if (p.min_value is None) != (p.max_value is None):
        out.append(f"parameter '{p.name}': give both min_value and max_value, or neither")
    elif p.min_value is not None:
        if isinstance(p.default, bool) or not isinstance(p.default, (int, float)):
            out.append(f"parameter '{p.name}': a range needs an int or float default")
        elif not p.min_value <= p.default <= p.max_value:
            out.append(f"parameter '{p.name}': default {p.default!r} outside {p.min_value} .. {p.max_value}")
    return out


def _param_problems(p: Any) -> List[str]:
    out = _range_problems(p)
    if not p.name or not p.description:
        out.append(f"parameter '{p.name}': needs a name and a description")
    if isinstance(p.default, (list, tuple)) and not p.default:
        out.append(f"parameter '{p.name}': an array default needs one element (it fixes the element type)")
    return out


def check_table(table: Sequence[Any]) -> List[str]:
    """Problems of a table: unnamed or undescribed parameters, bad ranges, duplicate names."""
    out: List[str] = []
    seen = set()
    for p in table:
        out += _param_problems(p)
        if p.name in seen:
            out.append(f"parameter '{p.name}' is declared twice")
        seen.add(p.name)
    return out


def _value_problem(p: Any, value: Any) -> Optional[str]:
    want = _ptype(p.default)
    if _ptype(value) is not want:
        return (f"'{p.name}': {value!r} is {type_name(value)}, the parameter is {type_name(p.default)} "
                f"(default {p.default!r})")
    if want is list and p.default and value:
        inner = _ptype(p.default[0])
        bad = [v for v in value if _ptype(v) is not inner]
        if bad:
            return f"'{p.name}': elements {bad!r} are not {type_name(p.default[0])}"
    if p.min_value is not None and not p.min_value <= value <= p.max_value:
        return f"'{p.name}': {value!r} outside {p.min_value} .. {p.max_value}"
    return None


def check_values(table: Sequence[Any], values: Mapping[str, Any],
                 extra: Iterable[str] = ("use_sim_time",)) -> List[str]:
    """Problems of ``name -> value`` (a params YAML's ``ros__parameters``) against ``table``: names the
    table does not declare (``extra``: parameters every node has), wrong types, values out of range."""
    by_name = {p.name: p for p in table}
    out = []
    for name, value in values.items():
        if name in extra:
            continue
        p = by_name.get(name)
        if p is None:
            out.append(f"'{name}' is not a parameter of this node")
            continue
        problem = _value_problem(p, value)
        if problem:
            out.append(problem)
    return out


def differences(table: Sequence[Any], values: Mapping[str, Any]) -> Dict[str, Tuple[Any, Any]]:
    """``name -> (value, default)`` for every value of ``values`` that differs from the table's default."""
    by_name = {p.name: p for p in table}
    return {n: (v, by_name[n].default) for n, v in values.items()
            if n in by_name and (v != by_name[n].default or _ptype(v) is not _ptype(by_name[n].default))}


def load_params_yaml(path: str) -> Dict[str, Dict[str, Any]]:
    """``node key -> ros__parameters`` of a ROS 2 params file (keys as written: ``/**``, ``sim_bridge``)."""
    import yaml

    with open(path) as f:
        data = yaml.safe_load(f) or {}
    return {key: dict((body or {}).get("ros__parameters") or {}) for key, body in data.items()}


def descriptor(p: Any):
    """The ``rcl_interfaces/ParameterDescriptor`` of a table entry (description with its unit, range,
    constraints, read_only)."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

    d = ParameterDescriptor(name=p.name, description=help_text(p), read_only=bool(getattr(p, "read_only", False)),
                            additional_constraints=p.constraints)
    if p.min_value is not None:
        if isinstance(p.default, int):
            d.integer_range = [IntegerRange(from_value=int(p.min_value), to_value=int(p.max_value), step=0)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=float(p.min_value),
                                                         to_value=float(p.max_value), step=0.0)]
    return d


def declare_all(node: Any, table: Sequence[Any]) -> Values:
    """Declare every parameter of ``table`` on ``node``, in order, and return their values (overrides
    from params files and the command line applied; out-of-range values refused by rclpy)."""
    problems = check_table(table)
    if problems:
        raise ValueError("; ".join(problems))
    values = Values()
    for p in table:
        default = list(p.default) if isinstance(p.default, tuple) else p.default
        values[p.name] = node.declare_parameter(p.name, default, descriptor(p)).value
    return values
