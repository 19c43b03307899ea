"""Observation and action terms <-> ROS messages, as a policy node reads ``io.yaml`` (no rclpy here).

:class:`ObsReader` turns the latest message of each source topic into the raw observation
vector, term by term; :class:`ActWriter` turns a command vector into one message per target
topic. Both work from the task's declared terms (the same ones that write ``io.yaml``), so the
lockstep training env and a policy node see the same wiring. The derive ops are
:mod:`rlstack_bundle.derive`'s, which the in-process envs and the policy node use too.

Supported sources (cart-pole, ball-on-plate and the Panda lift):

* ``sensor_msgs/msg/JointState`` ``position`` / ``velocity`` / ``effort`` by joint name
  (``key``), or the sum of several comma-separated joints (``derive: sum``);
* ``geometry_msgs/msg/PoseArray`` by object name (``key``; the name order comes from the
  matching ``MarkerArray`` ``ns``, as ``io.yaml``'s notes say): ``poses[].position.{x,y,z}`` as
  is, as a finite difference over one control period (0 on the first sample) or through
  ``offset_minus``; ``poses[].orientation`` through ``sin_kyaw`` / ``cos_kyaw``;
  ``poses[].position`` through ``distance`` (a term op on other terms' values);
* ``tf2_msgs/msg/TFMessage`` ``transforms`` through ``tf_position`` (the child frame's position
  in the parent frame, composed along the chain of the newest transforms seen this episode).

Anything else (the mobile lifts' ``/grasp_target``, images) raises :class:`Unsupported` naming
the term.

Action targets: ``std_msgs/msg/Float64`` / ``std_msgs/msg/Bool`` ``data`` (Bool: value > 0) and
``geometry_msgs/msg/Vector3`` ``x``/``y``/``z``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from rlstack_bundle import derive as ops

POSE_ARRAY = "geometry_msgs/msg/PoseArray"
JOINT_STATE = "sensor_msgs/msg/JointState"
MARKER_ARRAY = "visualization_msgs/msg/MarkerArray"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"


class Unsupported(NotImplementedError):
    pass


def stamp_ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def message_stamp_ns(msg) -> Optional[int]:
    """A message's time: its header's, or (TFMessage) its first transform's; None if it has none."""
    header = getattr(msg, "header", None)
    if header is not None:
        return stamp_ns(header.stamp)
    transforms = getattr(msg, "transforms", None)
    if transforms:
        return stamp_ns(transforms[0].header.stamp)
    return None


@dataclass
class _Obs:
    name: str
    topic: str
    kind: str                # joint | pose | tf | term
    keys: List[str]
    field: str               # joint: position/velocity/effort; pose: x/y/z or "orientation"
    derive: Any = None       # the term's derive (mapping, legacy text or None)
    diff: bool = False       # finite difference over one control period
    op: str = ""             # the derive op name ("" for none)


@dataclass
class _TfState:
    """The transforms of one TFMessage topic seen this episode (child -> (parent, t, q))."""
    edges: Dict[str, tuple] = field(default_factory=dict)
    last: Any = None         # the last message taken in (each is taken once)


class ObsReader:
    def __init__(self, obs_terms: Sequence[Any], control_rate_hz: float) -> None:
        self.rate = float(control_rate_hz)
        self.terms: List[_Obs] = []
        self.topic_types: Dict[str, str] = {}
        for t in obs_terms:
            s = t.source
            # legacy text or a machine-readable mapping (rlstack_bundle.derive): its op name
            op = ops.op_of(s.derive) or ""
            legacy = (s.derive or "").lower().replace("_", " ") if isinstance(s.derive, str) else ""
            if s.msg_type == JOINT_STATE and s.field in ("position", "velocity", "effort"):
                keys = [k for k in (s.key or "").split(",") if k]
                is_sum = op == "sum" or "sum" in legacy
                if not keys or (len(keys) > 1 and not is_sum) or ((op or legacy) and not is_sum):
                    raise Unsupported(f"observation term '{t.name}': {s.field} of {s.key!r} derived as {s.derive!r}")
                self.terms.append(_Obs(t.name, s.topic, "joint", keys, s.field, op="sum" if is_sum else ""))
            elif s.msg_type == POSE_ARRAY and s.field.startswith("poses[].position.") and s.key:
                axis = s.field.rsplit(".", 1)[1]
                diff = op == "finite_difference" or legacy.startswith("finite difference")
                if (op and op not in ("finite_difference", "offset_minus")) or (legacy and not diff):
                    raise Unsupported(f"observation term '{t.name}': derived as {s.derive!r}")
                self.terms.append(_Obs(t.name, s.topic, "pose", [s.key], axis, s.derive, diff=diff,
                                       op="" if diff else op))
            elif s.msg_type == POSE_ARRAY and s.field == "poses[].orientation" and s.key and \
                    op in ("sin_kyaw", "cos_kyaw"):
                self.terms.append(_Obs(t.name, s.topic, "pose", [s.key], "orientation", s.derive, op=op))
            elif op in ops.TERM_OPS:
                self.terms.append(_Obs(t.name, s.topic, "term", [], "", s.derive, op=op))
            elif s.msg_type == TF_MESSAGE and s.field == "transforms" and op == "tf_position":
                self.terms.append(_Obs(t.name, s.topic, "tf", [], "", s.derive, op=op))
            else:
                raise Unsupported(f"observation term '{t.name}': {s.msg_type} {s.field}"
                                  f"{' (' + (op or legacy) + ')' if (op or legacy) else ''} "
                                  "is not readable over ROS yet")
            if self.terms[-1].kind != "term":
                self.topic_types[s.topic] = s.msg_type
        self._prev: Dict[str, float] = {}
        self._tf: Dict[str, _TfState] = {t: _TfState() for t, ty in self.topic_types.items() if ty == TF_MESSAGE}

    @property
    def pose_topics(self) -> List[str]:
        return sorted({t.topic for t in self.terms if t.kind == "pose"})

    def reset(self) -> None:
        """Start of an episode: finite differences restart at 0, the TF trees empty."""
        self._prev = {}
        self._tf = {t: _TfState() for t in self._tf}

    def _tf_edges(self, topic: str, msg: Any) -> Dict[str, tuple]:
        state = self._tf[topic]
        if msg is not state.last:   # take each message in once; older transforms stay (a partial message)
            for tr in msg.transforms:
                tt, q = tr.transform.translation, tr.transform.rotation
                state.edges[str(tr.child_frame_id).lstrip("/")] = (
                    str(tr.header.frame_id).lstrip("/"), (float(tt.x), float(tt.y), float(tt.z)),
                    (float(q.x), float(q.y), float(q.z), float(q.w)))
            state.last = msg
        return state.edges

    def read(self, msgs: Dict[str, Any], names: Optional[Dict[str, List[str]]] = None) -> np.ndarray:
        """Raw observation from the latest message per topic (``names``: PoseArray topic -> object names)."""
        values: Dict[str, float] = {}
        index_cache: Dict[str, Dict[str, int]] = {}
        for t in self.terms:
            if t.kind == "term":
                continue
            msg = msgs[t.topic]
            if t.kind == "joint":
                idx = index_cache.setdefault(t.topic, {n: j for j, n in enumerate(msg.name)})
                series = getattr(msg, t.field)
                values[t.name] = sum(float(series[idx[k]]) for k in t.keys)
            elif t.kind == "tf":
                p = t.derive
                pos, _ = ops.compose(self._tf_edges(t.topic, msg), p["parent"], p["child"])
                values[t.name] = ops.apply(t.derive, pos)
            else:
                order = (names or {}).get(t.topic)
                if order is None:
                    raise KeyError(f"object names of {t.topic} unknown (no MarkerArray seen yet)")
                pose = msg.poses[order.index(t.keys[0])]
                if t.field == "orientation":
                    q = pose.orientation
                    values[t.name] = ops.apply(t.derive, (float(q.x), float(q.y), float(q.z), float(q.w)))
                    continue
                value = float(getattr(pose.position, t.field))
                if t.diff:
                    prev = self._prev.get(t.name)
                    self._prev[t.name] = value
                    value = 0.0 if prev is None else (value - prev) * self.rate
                elif t.op:
                    value = ops.apply(t.derive, value)
                values[t.name] = value
        for t in self.terms:
            if t.kind == "term":
                values[t.name] = ops.apply_terms(t.derive, values.__getitem__)
        return np.array([values[t.name] for t in self.terms], dtype=np.float64)

    def pose_z(self, msgs: Dict[str, Any], names: Dict[str, List[str]]) -> Optional[float]:
        """z of the first PoseArray-keyed object (ball-on-plate's "fell off" check)."""
        for t in self.terms:
            if t.kind == "pose":
                return float(msgs[t.topic].poses[names[t.topic].index(t.keys[0])].position.z)
        return None


class ActWriter:
    def __init__(self, act_terms: Sequence[Any]) -> None:
        self.topics: Dict[str, str] = {}
        self.slots: List[tuple] = []  # (topic, field, bool?)
        for t in act_terms:
            s = t.target
            if s.msg_type in ("std_msgs/msg/Float64", "std_msgs/msg/Bool") and s.field == "data":
                pass
            elif s.msg_type == "geometry_msgs/msg/Vector3" and s.field in ("x", "y", "z"):
                pass
            else:
                raise Unsupported(f"action term '{t.name}': {s.msg_type} {s.field}")
            self.topics[s.topic] = s.msg_type
            self.slots.append((s.topic, s.field, s.msg_type.endswith("/Bool")))

    def request_values(self, command: np.ndarray) -> List[float]:
        """The command as a step request carries it (SimStep ``command_values`` for
        ``command_topics`` = :attr:`topics`, in order): Float64/Bool 1 value (Bool: 1.0 when
        value > 0, as :meth:`messages` decides), Vector3 3 (x, y, z; fields no term sets are 0)."""
        out: List[float] = []
        for topic, msg_type in self.topics.items():
            if msg_type.endswith("/Vector3"):
                xyz = {"x": 0.0, "y": 0.0, "z": 0.0}
                for value, (t, field, _) in zip(command, self.slots):
                    if t == topic:
                        xyz[field] = float(value)
                out += [xyz["x"], xyz["y"], xyz["z"]]
            else:
                value, is_bool = next((v, b) for v, (t, _, b) in zip(command, self.slots) if t == topic)
                out.append((1.0 if value > 0 else 0.0) if is_bool else float(value))
        return out

    def messages(self, command: np.ndarray, classes: Dict[str, type]) -> Dict[str, Any]:
        """One message per target topic for a command vector (term units)."""
        msgs = {topic: classes[topic]() for topic in self.topics}
        for value, (topic, name, is_bool) in zip(command, self.slots):
            setattr(msgs[topic], name, bool(value > 0) if is_bool else float(value))
        return msgs
