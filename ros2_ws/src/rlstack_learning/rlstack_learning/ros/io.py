"""Observation and action terms <-> ROS messages, as a policy node reads ``io.yaml`` (no rclpy here).

:class:`ObsReader` turns the latest message of each source topic into the raw observation
vector, term by term; :class:`ActWriter` turns a command vector into one message per target
topic. Both work from the task's declared terms (the same ones that write ``io.yaml``), so the
lockstep training env and a policy node see the same wiring.

Supported sources (enough for cart-pole and ball-on-plate):

* ``sensor_msgs/msg/JointState`` ``position`` / ``velocity`` / ``effort`` by joint name
  (``key``), or the sum of several comma-separated joints when ``derive`` says "sum";
* ``geometry_msgs/msg/PoseArray`` ``poses[].position.{x,y,z}`` by object name (``key``; the
  name order comes from the matching ``MarkerArray`` ``ns``, as ``io.yaml``'s notes say),
  as is or as a finite difference over one control period (0 on the first sample).

Anything else (the lift task's ``/tf`` forward kinematics and yaw terms) raises
:class:`Unsupported` naming the term.

Action targets: ``std_msgs/msg/Float64`` / ``std_msgs/msg/Bool`` ``data`` (Bool: value > 0) and
``geometry_msgs/msg/Vector3`` ``x``/``y``/``z``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

POSE_ARRAY = "geometry_msgs/msg/PoseArray"
JOINT_STATE = "sensor_msgs/msg/JointState"
MARKER_ARRAY = "visualization_msgs/msg/MarkerArray"


class Unsupported(NotImplementedError):
    pass


def stamp_ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


@dataclass
class _Obs:
    name: str
    topic: str
    kind: str  # joint | pose
    keys: List[str]
    field: str  # position/velocity/effort or x/y/z
    diff: bool = False


class ObsReader:
    def __init__(self, obs_terms: Sequence[Any], control_rate_hz: float) -> None:
        self.rate = float(control_rate_hz)
        self.terms: List[_Obs] = []
        self.topic_types: Dict[str, str] = {}
        for t in obs_terms:
            s = t.source
            # legacy text or a machine-readable mapping (rlstack_bundle.derive): its op name
            derive = (s.derive.get("op", "") if isinstance(s.derive, dict) else (s.derive or "")).lower().replace("_", " ")
            if s.msg_type == JOINT_STATE and s.field in ("position", "velocity", "effort"):
                keys = [k for k in (s.key or "").split(",") if k]
                if not keys or (len(keys) > 1 and "sum" not in derive) or (derive and "sum" not in derive):
                    raise Unsupported(f"observation term '{t.name}': {s.field} of {s.key!r} derived as {s.derive!r}")
                self.terms.append(_Obs(t.name, s.topic, "joint", keys, s.field))
            elif s.msg_type == POSE_ARRAY and s.field.startswith("poses[].position.") and s.key:
                axis = s.field.rsplit(".", 1)[1]
                if derive and not derive.startswith("finite difference"):
                    raise Unsupported(f"observation term '{t.name}': derived as {s.derive!r}")
                self.terms.append(_Obs(t.name, s.topic, "pose", [s.key], axis, diff=bool(derive)))
            else:
                raise Unsupported(f"observation term '{t.name}': {s.msg_type} {s.field}"
                                  f"{' (' + derive + ')' if derive else ''} is not readable over ROS yet")
            self.topic_types[s.topic] = s.msg_type
        self._prev: Dict[str, float] = {}

    @property
    def pose_topics(self) -> List[str]:
        return sorted({t.topic for t in self.terms if t.kind == "pose"})

    def reset(self) -> None:
        """Start of an episode: finite differences restart at 0."""
        self._prev = {}

    def read(self, msgs: Dict[str, Any], names: Optional[Dict[str, List[str]]] = None) -> np.ndarray:
        """Raw observation from the latest message per topic (``names``: PoseArray topic -> object names)."""
        out = np.zeros(len(self.terms))
        index_cache: Dict[str, Dict[str, int]] = {}
        for i, t in enumerate(self.terms):
            msg = msgs[t.topic]
            if t.kind == "joint":
                idx = index_cache.setdefault(t.topic, {n: j for j, n in enumerate(msg.name)})
                values = getattr(msg, t.field)
                out[i] = sum(float(values[idx[k]]) for k in t.keys)
            else:
                order = (names or {}).get(t.topic)
                if order is None:
                    raise KeyError(f"object names of {t.topic} unknown (no MarkerArray seen yet)")
                value = float(getattr(msg.poses[order.index(t.keys[0])].position, t.field))
                if t.diff:
                    prev = self._prev.get(t.name)
                    self._prev[t.name] = value
                    value = 0.0 if prev is None else (value - prev) * self.rate
                out[i] = value
        return out

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
        for value, (topic, field, is_bool) in zip(command, self.slots):
            setattr(msgs[topic], field, bool(value > 0) if is_bool else float(value))
        return msgs
