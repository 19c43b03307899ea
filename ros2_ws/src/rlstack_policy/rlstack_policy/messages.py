"""Message types and field paths of the policy runner's core (no rclpy: message classes are
imported by name, ``pkg.msg``).

``source.field`` / ``target.field`` are dotted attribute paths. ``name[]`` is a sequence element
chosen by ``key`` (through a sibling ``name`` sequence, as in ``sensor_msgs/JointState``, or
through the ``key_indices`` map for messages without names, such as ``geometry_msgs/PoseArray``)
or by ``source.index``; ``name[3]`` is a fixed element. A sequence as the *last* segment with a
``key`` (``position`` + ``key: slider_to_cart``) is selected the same way. :func:`compile_path`
checks a path against the message type once (at configure); :func:`read_path` follows it on
every message.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

NUMERIC = {"double", "float", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
           "int64", "uint64", "byte", "octet", "char", "boolean"}
INTEGER = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "byte", "octet", "char"}


class SpecError(ValueError):
    """The descriptor cannot be wired: unknown type or field, unresolvable key, bad derive."""


# ----------------------------------------------------------------------------- message types
_TYPE_CACHE: Dict[str, Dict[str, str]] = {}


def message_class(type_name: str):
    """``pkg/msg/Name`` (or ``pkg/Name``) -> the Python message class; SpecError if unknown."""
    parts = type_name.split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or parts[1] != "msg" or not all(parts):
        raise SpecError(f"message type '{type_name}' is not of the form pkg/msg/Name")
    try:
        module = importlib.import_module(f"{parts[0]}.msg")
        cls = getattr(module, parts[2])
    except (ImportError, AttributeError):
        raise SpecError(f"unknown message type '{type_name}' (no Python module {parts[0]}.msg with {parts[2]}; "
                        "is its package installed and sourced?)") from None
    if not hasattr(cls, "get_fields_and_field_types"):
        raise SpecError(f"'{type_name}' is not a ROS message type")
    return cls


def ros_fields(type_name: str) -> Dict[str, str]:
    """Field name -> rosidl type string for a message type (cached)."""
    if type_name not in _TYPE_CACHE:
        _TYPE_CACHE[type_name] = dict(message_class(type_name).get_fields_and_field_types())
    return _TYPE_CACHE[type_name]


def _split_type(type_str: str) -> Tuple[str, bool]:
    """rosidl type string -> (element type, is_sequence)."""
    m = re.fullmatch(r"sequence<\s*([^,>]+)\s*(?:,\s*\d+)?>", type_str)
    if m:
        return m.group(1).strip(), True
    m = re.fullmatch(r"([^\[]+)\[\d*\]", type_str)
    if m:
        return m.group(1).strip(), True
    return type_str, False


def _normalise_type(t: str) -> str:
    """'geometry_msgs/Pose' -> 'geometry_msgs/msg/Pose'; primitives unchanged."""
    if "/" in t and t.count("/") == 1:
        pkg, name = t.split("/")
        return f"{pkg}/msg/{name}"
    return t


# ----------------------------------------------------------------------------- field paths
@dataclass(frozen=True)
class Segment:
    name: str
    selector: Optional[Any] = None  # None, "[]" (by key / index) or an int


def parse_field(text: str) -> List[Segment]:
    if not isinstance(text, str) or not text:
        raise SpecError(f"field must be a non-empty string, got {text!r}")
    segments = []
    for part in text.split("."):
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(\[(\d*)\])?", part)
        if not m:
            raise SpecError(f"field '{text}': cannot parse segment '{part}' (expected name, name[] or name[N])")
        sel = None if m.group(2) is None else ("[]" if m.group(3) == "" else int(m.group(3)))
        segments.append(Segment(m.group(1), sel))
    return segments


@dataclass
class _Step:
    """One compiled path step: attribute access, then optionally element selection."""

    name: str
    select: Optional[str] = None   # None | "index" | "name"
    index: int = 0
    key: str = ""


def compile_path(type_name: str, text: str, key: Optional[str], index: Optional[int],
                 key_indices: Mapping[str, int], fields_of: Callable[[str], Dict[str, str]] = ros_fields,
                 allow_message_leaf: bool = False,
                 keys: Optional[Sequence[str]] = None) -> Tuple[List[List[_Step]], str]:
    """Check ``text`` against the message type and return (one step list per key, leaf type).

    ``keys`` (several keys, e.g. for a sum) compiles one path per key. The leaf must be numeric
    unless ``allow_message_leaf`` (derives that read a whole Point/Quaternion).
    """
    segments = parse_field(text)
    key_list = list(keys) if keys else [key]
    paths: List[List[_Step]] = []
    leaf = ""
    for k in key_list:
        steps: List[_Step] = []
        cur = _normalise_type(type_name)
        fields_of(cur)  # unknown type -> SpecError
        for i, seg in enumerate(segments):
            fields = fields_of(cur)
            if seg.name not in fields:
                raise SpecError(f"field '{text}': '{seg.name}' is not a field of {cur} (fields: {', '.join(fields)})")
            elem, is_seq = _split_type(fields[seg.name])
            last = i == len(segments) - 1
            step = _Step(seg.name)
            if is_seq:
                if seg.selector is None and not (last and k is not None):
                    raise SpecError(f"field '{text}': '{seg.name}' is a sequence in {cur}; write "
                                    f"'{seg.name}[]' with a key or '{seg.name}[N]'")
                if isinstance(seg.selector, int):
                    step.select, step.index = "index", seg.selector
                elif k is not None and "name" in fields and _split_type(fields["name"]) == ("string", True) \
                        and seg.name != "name":
                    step.select, step.key = "name", k          # JointState: position by joint name
                elif k is not None and k in key_indices:
                    step.select, step.index = "index", int(key_indices[k])
                elif index is not None:
                    step.select, step.index = "index", int(index)
                elif k is not None:
                    raise SpecError(f"field '{text}' of {type_name}: element '{k}' cannot be resolved: "
                                    f"{cur}.{seg.name} has no parallel 'name' list; give its index in the "
                                    f"parameter key_indices (e.g. '{k}=0')")
                else:
                    raise SpecError(f"field '{text}': '{seg.name}[]' needs a key or an index")
            elif seg.selector is not None:
                raise SpecError(f"field '{text}': '{seg.name}' is not a sequence in {cur}")
            steps.append(step)
            cur = _normalise_type(elem)
        leaf = cur
        if cur not in NUMERIC and not (allow_message_leaf and "/" in cur):
            raise SpecError(f"field '{text}' of {type_name} ends in type '{cur}', not a number")
        paths.append(steps)
    return paths, leaf


def read_path(msg: Any, steps: List[_Step]) -> Any:
    """Follow compiled steps; KeyError for a missing key, IndexError for a missing index."""
    obj = msg
    for step in steps:
        parent = obj
        obj = getattr(obj, step.name)
        if step.select == "index":
            obj = obj[step.index]
        elif step.select == "name":
            names = parent.name
            try:
                obj = obj[list(names).index(step.key)]
            except ValueError:
                raise KeyError(step.key) from None
    return obj


def _quat(q: Any) -> Tuple[float, float, float, float]:
    return (float(q.x), float(q.y), float(q.z), float(q.w))
