"""Hostile ROS 2 messages for fuzzing a running graph. No rclpy.

:func:`hostile_messages` turns one message type into a list of ``(kind, message)`` pairs:
a plausible message of that type with one thing wrong at a time. What is wrong is generic,
found by walking the type's fields through rosidl's introspection
(``get_fields_and_field_types``), so every type a node subscribes to gets the same treatment:

* ``default``: the all-zero message (empty frame, zero stamp, empty arrays);
* ``nan`` / ``inf`` / ``huge``: every floating-point field NaN, +-inf, or 1e300;
* ``empty_sequences`` / ``long_sequences``: every variable-length array emptied, or made
  10,000 long (strings in it: 'x');
* ``unknown_frame`` / ``empty_frame``: every ``frame_id`` / ``child_frame_id`` set to a
  frame no tree has, or to '';
* ``stamp_zero`` / ``stamp_past`` / ``stamp_future``: header stamps at 0, an hour back, a
  million seconds ahead (a stale message, a clock jump);
* ``long_strings``: every string 100,000 characters, control characters included.

Images, camera infos, transforms, joint states and grids get the malformations their readers
must check on top (sizes that disagree with the data, unknown encodings, zero quaternions, ...):
see :data:`SPECIFIC`. The plausible base of each known type is built by :func:`plausible`; an
unknown type starts from its default message.
"""

from __future__ import annotations

import copy
import math
import re
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

FLOAT_TYPES = ("float", "double")
INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "byte", "char", "octet")
_SEQ = re.compile(r"sequence<(.+?)(?:, *\d+)?>\Z")
_ARRAY = re.compile(r"(.+)\[(\d+)\]\Z")
UNKNOWN_FRAME = "no_such_frame"
LONG = 10_000

Kind = Tuple[str, Any]


def _element_type(type_str: str) -> Tuple[str, Optional[str]]:
    """(element type, 'seq' | 'array' | None) of a field type string."""
    m = _SEQ.match(type_str)
    if m:
        return m.group(1), "seq"
    m = _ARRAY.match(type_str)
    if m:
        return m.group(1), "array"
    return type_str, None


def _is_message(type_str: str) -> bool:
    return "/" in type_str


def map_fields(msg: Any, fn: Callable[[str, str, Any], Any], path: str = "") -> None:
    """Call ``fn(path, type_str, value)`` for every leaf field of ``msg`` (recursing into nested
    messages and sequences of messages) and set the field to what it returns (``...`` keeps it)."""
    for name, type_str in msg.get_fields_and_field_types().items():
        here = f"{path}.{name}" if path else name
        value = getattr(msg, name)
        elem, shape = _element_type(type_str)
        if _is_message(elem):
            if shape is None:
                map_fields(value, fn, here)
            else:
                for i, item in enumerate(value):
                    map_fields(item, fn, f"{here}[{i}]")
            if shape == "seq":
                new = fn(here, type_str, value)
                if new is not ...:
                    setattr(msg, name, new)
            continue
        new = fn(here, type_str, value)
        if new is not ...:
            setattr(msg, name, new)


def _floats(fill: Callable[[int], float]) -> Callable[[str, str, Any], Any]:
    def fn(_path: str, type_str: str, value: Any) -> Any:
        elem, shape = _element_type(type_str)
        if elem not in FLOAT_TYPES:
            return ...
        if shape is None:
            return fill(0)
        return [fill(i) for i in range(len(value))]
    return fn


def _sequences(length: int) -> Callable[[str, str, Any], Any]:
    def fn(_path: str, type_str: str, value: Any) -> Any:
        elem, shape = _element_type(type_str)
        if shape != "seq":
            return ...
        if length == 0:
            return []
        if _is_message(elem):
            return ...   # nested message sequences: grown below, one plausible item repeated
        if elem in FLOAT_TYPES:
            return [0.5] * length
        if elem in INT_TYPES:
            return bytes(length) if elem in ("uint8", "byte", "octet") else [1] * length
        if elem in ("string", "wstring"):
            return ["x"] * length
        if elem == "boolean":
            return [True] * length
        return ...
    return fn


def _frames(frame: str) -> Callable[[str, str, Any], Any]:
    def fn(path: str, type_str: str, _value: Any) -> Any:
        leaf = path.rsplit(".", 1)[-1]
        return frame if type_str == "string" and leaf in ("frame_id", "child_frame_id") else ...
    return fn


def _strings(text: str) -> Callable[[str, str, Any], Any]:
    def fn(path: str, type_str: str, value: Any) -> Any:
        elem, shape = _element_type(type_str)
        if elem not in ("string", "wstring"):
            return ...
        return text if shape is None else [text] * max(1, len(value))
    return fn


def _set_stamps(msg: Any, sec: int, nanosec: int = 0) -> bool:
    """Set every ``builtin_interfaces/Time`` field; False when the type has none."""
    found = False

    def visit(m: Any) -> None:
        nonlocal found
        for name, type_str in m.get_fields_and_field_types().items():
            elem, shape = _element_type(type_str)
            value = getattr(m, name)
            if elem == "builtin_interfaces/Time":
                for item in (value if shape else [value]):
                    item.sec, item.nanosec = sec, nanosec
                    found = True
            elif _is_message(elem):
                for item in (value if shape else [value]):
                    visit(item)
    visit(msg)
    return found


def _type_name(cls: type) -> str:
    module = cls.__module__.split(".")[0]
    return f"{module}/{cls.__name__}"


def _stamp(msg: Any, now: float) -> None:
    _set_stamps(msg, int(now), int((now % 1.0) * 1e9))


def plausible(cls: type, now: Optional[float] = None) -> Any:
    """A well-formed message of ``cls`` as a robot would send it (stamped ``now``)."""
    now = time.time() if now is None else now
    msg = cls()
    name = _type_name(cls)
    if name == "sensor_msgs/Image":
        msg.header.frame_id = "head_camera_optical_frame"
        msg.height, msg.width, msg.encoding, msg.step = 24, 32, "32FC1", 32 * 4
        msg.data = np.full((24, 32), 1.5, dtype=np.float32).tobytes()
    elif name == "sensor_msgs/CameraInfo":
        msg.header.frame_id = "head_camera_optical_frame"
        msg.height, msg.width, msg.distortion_model = 24, 32, "plumb_bob"
        msg.d = [0.0] * 5
        msg.k = [30.0, 0.0, 16.0, 0.0, 30.0, 12.0, 0.0, 0.0, 1.0]
        msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        msg.p = [30.0, 0.0, 16.0, 0.0, 0.0, 30.0, 12.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    elif name == "tf2_msgs/TFMessage":
        from geometry_msgs.msg import TransformStamped

        t = TransformStamped()
        t.header.frame_id, t.child_frame_id = "odom", "base_link"
        t.transform.rotation.w = 1.0
        msg.transforms = [t]
    elif name == "nav_msgs/Odometry":
        msg.header.frame_id, msg.child_frame_id = "odom", "base_link"
        msg.pose.pose.orientation.w = 1.0
    elif name == "nav_msgs/OccupancyGrid":
        msg.header.frame_id = "map"
        msg.info.resolution, msg.info.width, msg.info.height = 0.05, 10, 10
        msg.info.origin.orientation.w = 1.0
        msg.data = [0] * 100
    elif name == "sensor_msgs/JointState":
        msg.name = ["joint_a", "joint_b"]
        msg.position, msg.velocity, msg.effort = [0.1, 0.2], [0.0, 0.0], [0.0, 0.0]
    elif name in ("geometry_msgs/PoseStamped", "geometry_msgs/PoseWithCovarianceStamped"):
        msg.header.frame_id = "map"
        pose = msg.pose if name.endswith("PoseStamped") and not name.endswith("CovarianceStamped") else msg.pose.pose
        pose.orientation.w = 1.0
    elif name == "geometry_msgs/PoseArray":
        from geometry_msgs.msg import Pose

        msg.header.frame_id = "map"
        p = Pose()
        p.position.x, p.orientation.w = 1.0, 1.0
        msg.poses = [p]
    elif name == "std_msgs/String":
        msg.data = "OK"
    elif name == "std_msgs/Bool":
        msg.data = False
    _stamp(msg, now)
    return msg


def _image_cases(base: Any) -> List[Kind]:
    out = []

    def variant(kind: str, **fields: Any) -> None:
        m = copy.deepcopy(base)
        for k, v in fields.items():
            setattr(m, k, v)
        out.append((kind, m))

    variant("image_bad_encoding", encoding="yuv_weird")
    variant("image_short_data", data=bytes(10))
    variant("image_claims_huge", height=100_000, width=100_000, step=400_000)
    variant("image_zero_size", height=0, width=0, step=0, data=b"")
    variant("image_wrong_step", step=base.step + 3)
    variant("image_bigendian", is_bigendian=1)
    nan_depth = np.full((base.height, base.width), np.nan, dtype=np.float32)
    variant("image_nan_depth", encoding="32FC1", step=base.width * 4, data=nan_depth.tobytes())
    inf_depth = np.full((base.height, base.width), -np.inf, dtype=np.float32)
    variant("image_inf_depth", encoding="32FC1", step=base.width * 4, data=inf_depth.tobytes())
    # large and well formed: 1280 x 960 rgb8, 3.7 MB (the middleware's largest message is 4 MiB)
    variant("image_large_rgb", height=960, width=1280, encoding="rgb8", step=1280 * 3,
            data=np.full((960, 1280, 3), 7, dtype=np.uint8).tobytes())
    return out


def _camera_info_cases(base: Any) -> List[Kind]:
    out = []
    for kind, k in (("camera_info_zero_focal", [0.0] * 9),
                    ("camera_info_negative_focal", [-30.0, 0, 16, 0, -30.0, 12, 0, 0, 1])):
        m = copy.deepcopy(base)
        m.k = [float(v) for v in k]
        out.append((kind, m))
    m = copy.deepcopy(base)
    m.width, m.height = 0, 0
    out.append(("camera_info_zero_size", m))
    return out


def _tf_cases(base: Any) -> List[Kind]:
    out = []
    t0 = base.transforms[0]

    def variant(kind: str, edit: Callable[[Any], None]) -> None:
        m = copy.deepcopy(base)
        edit(m.transforms[0])
        out.append((kind, m))

    def zero_quat(t: Any) -> None:
        t.transform.rotation.w = 0.0
    variant("tf_zero_quaternion", zero_quat)

    def unnormalised(t: Any) -> None:
        t.transform.rotation.x, t.transform.rotation.w = 3.0, 4.0
    variant("tf_unnormalised_quaternion", unnormalised)

    def self_loop(t: Any) -> None:
        t.child_frame_id = t.header.frame_id
    variant("tf_self_parent", self_loop)

    # a cycle: base_link -> odom beside odom -> base_link
    m = copy.deepcopy(base)
    back = copy.deepcopy(t0)
    back.header.frame_id, back.child_frame_id = t0.child_frame_id, t0.header.frame_id
    m.transforms = [t0, back]
    out.append(("tf_cycle", m))
    return out


def _joint_cases(base: Any) -> List[Kind]:
    m = copy.deepcopy(base)
    m.position = [0.1]
    m2 = copy.deepcopy(base)
    m2.name = ["joint_a", "joint_a"]
    return [("joint_length_mismatch", m), ("joint_duplicate_names", m2)]


def _grid_cases(base: Any) -> List[Kind]:
    m = copy.deepcopy(base)
    m.data = [0] * 7
    m2 = copy.deepcopy(base)
    m2.info.resolution = 0.0
    m3 = copy.deepcopy(base)
    m3.info.width, m3.info.height = 100_000, 100_000
    return [("grid_short_data", m), ("grid_zero_resolution", m2), ("grid_claims_huge", m3)]


def _quaternion_cases(base: Any) -> List[Kind]:
    """Any message with one pose: a zero orientation quaternion."""
    m = copy.deepcopy(base)
    hit = False

    def fn(path: str, type_str: str, _v: Any) -> Any:
        nonlocal hit
        if path.endswith("orientation.w") and type_str == "double":
            hit = True
            return 0.0
        return ...
    map_fields(m, fn)
    return [("zero_quaternion", m)] if hit else []


#: malformations a reader of that type must check, beyond the generic ones
SPECIFIC: Dict[str, Callable[[Any], List[Kind]]] = {
    "sensor_msgs/Image": _image_cases,
    "sensor_msgs/CameraInfo": _camera_info_cases,
    "tf2_msgs/TFMessage": _tf_cases,
    "sensor_msgs/JointState": _joint_cases,
    "nav_msgs/OccupancyGrid": _grid_cases,
    "nav_msgs/Odometry": _quaternion_cases,
    "geometry_msgs/PoseStamped": _quaternion_cases,
    "geometry_msgs/PoseWithCovarianceStamped": _quaternion_cases,
}


def hostile_messages(cls: type, now: Optional[float] = None) -> List[Kind]:
    """``(kind, message)`` pairs: a plausible ``cls`` message with one thing wrong each.

    Kinds that change nothing for this type (``nan`` of a type without floats, ...) are left out,
    so every returned message differs from the plausible one."""
    now = time.time() if now is None else now
    base = plausible(cls, now)
    out: List[Kind] = [("default", cls())]

    def add(kind: str, fn: Callable[[str, str, Any], Any]) -> None:
        m = copy.deepcopy(base)
        map_fields(m, fn)
        if m != base:
            out.append((kind, m))

    add("nan", _floats(lambda i: math.nan))
    add("inf", _floats(lambda i: math.inf if i % 2 == 0 else -math.inf))
    add("huge", _floats(lambda i: 1e300))
    add("empty_sequences", _sequences(0))
    add("long_sequences", _sequences(LONG))
    add("unknown_frame", _frames(UNKNOWN_FRAME))
    add("empty_frame", _frames(""))
    add("long_strings", _strings(("\x00\x1b[2J" + "\u00e9x" * 5) * 10_000))
    for kind, sec in (("stamp_zero", 0), ("stamp_past", int(now) - 3600), ("stamp_future", int(now) + 1_000_000)):
        m = copy.deepcopy(base)
        if _set_stamps(m, sec):
            out.append((kind, m))
    special = SPECIFIC.get(_type_name(cls))
    if special is not None:
        out.extend(special(base))
    return out
