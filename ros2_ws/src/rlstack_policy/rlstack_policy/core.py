"""The policy runner's pure core: no rclpy, no torch, no pickle.

It turns a bundle's IO descriptor (``io.yaml``, format ``rlstack-policy-io/1``) into

* an :class:`ObsPlan`: for every observation topic, compiled getters that read each term's
  value from a message (``field`` path, ``key``/index selection, ``derive``, ``scale``), and
* an :class:`ActPlan`: for every action topic, the terms and the field each one sets,

and runs one control step safely:

* :class:`ObservationAssembler` keeps the latest accepted value of every term with the time
  it arrived; a message with NaN/inf (or a missing key) marks its topic invalid until the
  next good message; :meth:`ObservationAssembler.assemble` refuses (returns a fault) when a
  topic was never received, is invalid, or is older than ``stale_after_s``.
* :class:`ActionShaper` maps the network output to commands exactly as training did
  (``clip(offset + scale * clip(a, -1, 1), limits)`` or ``choices[a]``), then rate-limits
  and clips again; :meth:`ActionShaper.safe` gives the safe action (zero, hold or a value).
* :class:`EStopLatch` latches the safe action until reset (and refuses a reset while the
  e-stop input is still asserted).
* :class:`LoopStats` measures achieved rate, jitter, observation-to-action latency and
  overruns for the diagnostics.

Field paths (``source.field`` / ``target.field``) are dotted attribute paths. ``name[]`` is a
sequence element chosen by ``key`` (through a sibling ``name`` sequence, as in
``sensor_msgs/JointState``, or through the ``key_indices`` map for messages without names,
such as ``geometry_msgs/PoseArray``) or by ``source.index``; ``name[3]`` is a fixed element.
A sequence as the *last* segment with a ``key`` (``position`` + ``key: slider_to_cart``) is
selected the same way.

``source.derive`` is either a machine-readable mapping ``{op: ..., params}`` (the closed set
of :mod:`rlstack_bundle.derive`: ``tf_position``, ``sum``, ``sin_kyaw``, ``cos_kyaw``,
``offset_minus``, ``distance``, ``finite_difference``; evaluated with that module's functions,
which the training envs use too) or one of the legacy texts (``finite difference ...``,
``sum of ...``, ``sin(k * yaw)``, ``cos(k * yaw)``). ``tf_position`` terms keep a TF buffer
per ``tf2_msgs/msg/TFMessage`` topic (child frame -> parent, translation, rotation; every
message updates the frames it carries) and compose the chain parent -> ... -> child.
``distance`` terms are computed at assembly from the raw values of the terms they name.
"""

from __future__ import annotations

import importlib
import math
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from rlstack_bundle import derive as derive_ops  # pure Python: the same operations the envs use

IO_FORMAT = "rlstack-policy-io/1"
NUMERIC = {"double", "float", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
           "int64", "uint64", "byte", "octet", "char", "boolean"}
INTEGER = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "byte", "octet", "char"}
SAFE_MODES = ("zero", "hold")


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
                 allow_message_leaf: bool = False, keys: Optional[Sequence[str]] = None) -> Tuple[List[List[_Step]], str]:
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


# ----------------------------------------------------------------------------- derives
@dataclass(frozen=True)
class Derive:
    kind: str            # "none" or an op of rlstack_bundle.derive.OPS
    factor: float = 1.0  # k of sin/cos(k * yaw)
    spec: Optional[Tuple[Tuple[str, Any], ...]] = None   # the descriptor's mapping (op and parameters)

    @property
    def params(self) -> Dict[str, Any]:
        return dict(self.spec or ())


SUPPORTED_DERIVES = ("{op: tf_position, parent, child, axis}, {op: sum}, {op: sin_kyaw, k}, {op: cos_kyaw, k}, "
                     "{op: offset_minus, constant}, {op: distance, a: [terms], b: [terms]}, {op: finite_difference}; "
                     "legacy text: 'finite difference ...', 'sum of ...' (comma-separated keys), 'sin(k * yaw)', "
                     "'cos(k * yaw)'")


def parse_derive(text: Any, name: str = "?") -> Derive:
    """Map a descriptor's ``derive`` (mapping or legacy text) to an implemented derivation, or raise SpecError."""
    if text is None or (isinstance(text, str) and text.strip() == ""):
        return Derive("none")
    if isinstance(text, Mapping):
        problems = derive_ops.check(text, name=name)
        if problems:
            raise SpecError(f"{'; '.join(problems)} (this node implements: {SUPPORTED_DERIVES})")
        spec = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in text.items())
        factor = float(text.get("k", 1.0)) if text["op"] in ("sin_kyaw", "cos_kyaw") else 1.0
        return Derive(str(text["op"]), factor, spec)
    t = str(text).strip().lower()
    if t.startswith("finite difference"):
        return Derive("finite_difference")
    if t.startswith("sum of"):
        return Derive("sum")
    m = re.fullmatch(r"(sin|cos)\(\s*(?:([0-9.]+)\s*\*\s*)?yaw\s*\)", t)
    if m:
        k = float(m.group(2) or 1.0)
        return Derive(f"{m.group(1)}_kyaw", k, (("op", f"{m.group(1)}_kyaw"), ("k", k)))
    raise SpecError(f"unsupported derive '{text}'; this node implements: {SUPPORTED_DERIVES}")


# ----------------------------------------------------------------------------- plans
TFBuffer = Dict[str, Tuple[str, Tuple[float, float, float], Tuple[float, float, float, float]]]


@dataclass
class ObsTermPlan:
    index: int
    name: str
    topic: str               # after remapping
    descriptor_topic: str
    msg_type: str
    scale: float
    derive: Derive
    paths: List[List[_Step]]
    refs: Optional[Tuple[Tuple[int, ...], Tuple[int, ...]]] = None   # distance: term indices of a and b

    @property
    def from_terms(self) -> bool:
        """Computed at assembly from other terms (``distance``), not from a message."""
        return self.derive.kind in derive_ops.TERM_OPS

    def raw(self, msg: Any, tf: Optional[TFBuffer] = None) -> float:
        kind = self.derive.kind
        if kind == "tf_position":
            p = self.derive.params
            pos, _ = derive_ops.compose(tf or {}, p["parent"], p["child"])
            return derive_ops.apply(self.derive.params, pos)
        if kind == "sum":
            return float(sum(float(read_path(msg, path)) for path in self.paths))
        value = read_path(msg, self.paths[0])
        if kind in ("sin_kyaw", "cos_kyaw"):
            return derive_ops.apply(self.derive.params, _quat(value))
        if kind == "offset_minus":
            return derive_ops.apply(self.derive.params, float(value))
        return float(value)


def update_tf_buffer(buffer: TFBuffer, msg: Any) -> None:
    """Take every transform of a TFMessage (child -> parent, translation, rotation); ValueError if
    any used number is NaN/inf (the buffer is left unchanged then)."""
    new: TFBuffer = {}
    for tr in msg.transforms:
        t, q = tr.transform.translation, tr.transform.rotation
        pos = (float(t.x), float(t.y), float(t.z))
        rot = (float(q.x), float(q.y), float(q.z), float(q.w))
        if not all(math.isfinite(v) for v in pos + rot):
            raise ValueError(f"non-finite transform {tr.header.frame_id} -> {tr.child_frame_id}")
        new[str(tr.child_frame_id).lstrip("/")] = (str(tr.header.frame_id).lstrip("/"), pos, rot)
    buffer.update(new)


@dataclass
class ObsPlan:
    terms: List[ObsTermPlan]
    topics: Dict[str, str]   # topic -> message type, in first-use order

    @property
    def size(self) -> int:
        return len(self.terms)


@dataclass
class ActTermPlan:
    index: int
    name: str
    topic: str
    descriptor_topic: str
    msg_type: str
    path: List[_Step]
    leaf: str
    limits: Tuple[float, float]
    scale: float = 1.0
    offset: float = 0.0
    choices: Optional[List[float]] = None
    threshold: Optional[float] = None   # bool targets: value > threshold


@dataclass
class ActPlan:
    terms: List[ActTermPlan]
    topics: Dict[str, str]
    discrete: bool

    @property
    def size(self) -> int:
        return len(self.terms)


def parse_key_indices(items: Sequence[str]) -> Dict[str, int]:
    out = {}
    for item in items:
        m = re.fullmatch(r"\s*([^=\s]+)\s*=\s*(\d+)\s*", item or "")
        if not m:
            raise SpecError(f"key_indices entry '{item}' is not 'key=index'")
        out[m.group(1)] = int(m.group(2))
    return out


def parse_remaps(items: Sequence[str]) -> Dict[str, str]:
    out = {}
    for item in items:
        m = re.fullmatch(r"\s*(/[^=\s]*)\s*=\s*(/[^=\s]*)\s*", item or "")
        if not m:
            raise SpecError(f"topic_remaps entry '{item}' is not '/descriptor_topic=/actual_topic'")
        out[m.group(1)] = m.group(2)
    return out


def _check_types(topics: Dict[str, str], topic: str, msg_type: str, where: str) -> None:
    if topics.setdefault(topic, msg_type) != msg_type:
        raise SpecError(f"{where}: topic {topic} is used with two types, {topics[topic]} and {msg_type}")


def compile_io(io: Mapping[str, Any], key_indices: Mapping[str, int] = None, remaps: Mapping[str, str] = None,
               fields_of: Callable[[str], Dict[str, str]] = ros_fields) -> Tuple[ObsPlan, ActPlan]:
    """Compile a validated io.yaml into plans; SpecError names the term and the problem."""
    key_indices = dict(key_indices or {})
    remaps = dict(remaps or {})
    if io.get("format") != IO_FORMAT:
        raise SpecError(f"io.yaml format must be '{IO_FORMAT}', got {io.get('format')!r}")
    obs_terms, obs_topics = [], {}
    names = [t.get("name") for t in io.get("observation") or []]
    for i, t in enumerate(io.get("observation") or []):
        where = f"observation[{i}] '{t.get('name')}'"
        src = t.get("source") or {}
        refs = None
        try:
            derive = parse_derive(src.get("derive"), t.get("name", "?"))
            key = src.get("key")
            keys = [k.strip() for k in str(key).split(",")] if derive.kind == "sum" and key else None
            if derive.kind == "sum" and not (keys and len(keys) >= 1):
                raise SpecError("derive 'sum of ...' needs comma-separated keys")
            if derive.kind == "tf_position":
                fields = fields_of(_normalise_type(src["type"]))
                if src["field"] != "transforms" or "transforms" not in fields or \
                        _normalise_type(_split_type(fields["transforms"])[0]) != "geometry_msgs/msg/TransformStamped":
                    raise SpecError(f"derive tf_position reads field 'transforms' of a tf2_msgs/msg/TFMessage topic, "
                                    f"got field '{src['field']}' of {src['type']}")
                paths = []
            else:
                paths, _ = compile_path(src["type"], src["field"], key, src.get("index"), key_indices, fields_of,
                                        allow_message_leaf=derive.kind in ("sin_kyaw", "cos_kyaw", "distance"),
                                        keys=keys)
            if derive.kind == "distance":
                p = derive.params
                problems = derive_ops.check(src["derive"], names, t.get("name"))
                if problems:
                    raise SpecError("; ".join(problems))
                idx = [tuple(names.index(n) for n in p[side]) for side in ("a", "b")]
                chained = [names[j] for j in idx[0] + idx[1]
                           if derive_ops.op_of((io["observation"][j].get("source") or {}).get("derive"))
                           in derive_ops.TERM_OPS]
                if chained:
                    raise SpecError(f"derive distance refers to term(s) {chained} that are computed from terms too")
                refs = (idx[0], idx[1])
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
        topic = remaps.get(src["topic"], src["topic"])
        _check_types(obs_topics, topic, src["type"], where)
        obs_terms.append(ObsTermPlan(i, t["name"], topic, src["topic"], src["type"], float(t["scale"]), derive, paths,
                                     refs))
    discrete = (io.get("model") or {}).get("output", {}).get("kind") == "discrete"
    act_terms, act_topics = [], {}
    for j, t in enumerate(io.get("action") or []):
        where = f"action[{j}] '{t.get('name')}'"
        tgt = t.get("target") or {}
        try:
            paths, leaf = compile_path(tgt["type"], tgt["field"], None, None, {}, fields_of)
            if any(s.select for s in paths[0]):
                raise SpecError(f"target field '{tgt['field']}' selects a sequence element; targets must be plain fields")
            threshold = None
            if leaf == "boolean":
                m = re.search(r"value\s*>\s*(-?[0-9.]+)", str(tgt.get("derive") or ""))
                if not m:
                    raise SpecError(f"boolean target '{tgt['field']}' needs derive 'true = value > THRESHOLD', "
                                    f"got {tgt.get('derive')!r}")
                threshold = float(m.group(1))
            elif tgt.get("derive"):
                raise SpecError(f"unsupported target derive {tgt.get('derive')!r}")
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
        topic = remaps.get(tgt["topic"], tgt["topic"])
        _check_types(act_topics, topic, tgt["type"], where)
        lo, hi = (float(v) for v in t["limits"])
        act_terms.append(ActTermPlan(
            j, t["name"], topic, tgt["topic"], tgt["type"], paths[0], leaf, (lo, hi),
            float(t.get("scale", 1.0)), float(t.get("offset", 0.0)),
            [float(c) for c in t["choices"]] if discrete else None, threshold))
    if not obs_terms or not act_terms:
        raise SpecError("io.yaml needs at least one observation and one action term")
    return ObsPlan(obs_terms, obs_topics), ActPlan(act_terms, act_topics, discrete)


def descriptor_topics(io: Mapping[str, Any], remaps: Mapping[str, str] = None) -> Tuple[Dict[str, str], Dict[str, str]]:
    """(observation topic -> type, action topic -> type) of a descriptor, after remapping; no field checks."""
    remaps = dict(remaps or {})
    out: Tuple[Dict[str, str], Dict[str, str]] = ({}, {})
    for d, section, key in ((out[0], "observation", "source"), (out[1], "action", "target")):
        for t in io.get(section) or []:
            src = (t or {}).get(key) or {}
            if isinstance(src.get("topic"), str):
                d.setdefault(remaps.get(src["topic"], src["topic"]), str(src.get("type")))
    return out


def wiring_mismatch(wired_obs: Mapping[str, str], wired_act: Mapping[str, str], obs: Any, act: Any) -> List[str]:
    """Why a new bundle cannot run on the node's existing subscriptions/publishers ([] = it can).

    ``obs``/``act``: plans or topic -> type dicts. Observation topics must be a subset of the
    wired subscriptions (same types); the action topics must be exactly the wired publishers
    (a target left unpublished would go stale).
    """
    obs_topics = obs if isinstance(obs, Mapping) else obs.topics
    act_topics = act if isinstance(act, Mapping) else act.topics
    problems = []
    for topic, typ in obs_topics.items():
        if topic not in wired_obs:
            problems.append(f"observation topic {topic} ({typ}) is not wired (wired: {', '.join(wired_obs) or 'none'})")
        elif wired_obs[topic] != typ:
            problems.append(f"observation topic {topic} is wired as {wired_obs[topic]}, the bundle reads {typ}")
    if set(act_topics) != set(wired_act):
        problems.append(f"action topics {sorted(act_topics)} differ from the wired {sorted(wired_act)}")
    for topic, typ in act_topics.items():
        if topic in wired_act and wired_act[topic] != typ:
            problems.append(f"action topic {topic} is wired as {wired_act[topic]}, the bundle writes {typ}")
    return problems


# ----------------------------------------------------------------------------- observations
@dataclass
class _TopicState:
    terms: List[ObsTermPlan]
    values: Dict[int, float] = field(default_factory=dict)
    rx_time: Optional[float] = None
    invalid: Optional[str] = None         # rejection kind of the last message, None when good
    updates: int = 0
    last_msg: Any = None
    last_msg_time: Optional[float] = None
    prev_raw: Dict[int, float] = field(default_factory=dict)
    tf: Optional[TFBuffer] = None          # TF buffer of a topic with tf_position terms


class ObservationAssembler:
    """Latest observation values per topic, checked for staleness and NaN/inf at assembly."""

    def __init__(self, plan: ObsPlan, period_s: float, stale_after_s: float) -> None:
        self.plan = plan
        self.period_s = float(period_s)
        self.stale_after_s = float(stale_after_s)
        self.topics: Dict[str, _TopicState] = {}
        self.term_terms = [t for t in plan.terms if t.from_terms]   # computed at assembly
        for t in plan.terms:
            if not t.from_terms:
                self.topics.setdefault(t.topic, _TopicState([])).terms.append(t)
        for st in self.topics.values():
            if any(t.derive.kind == "tf_position" for t in st.terms):
                st.tf = {}
        self._raw = np.zeros(plan.size, dtype=np.float64)
        self._obs = np.zeros(plan.size, dtype=np.float32)
        self._scales = np.array([t.scale for t in plan.terms], dtype=np.float64)
        self._step_marks: Dict[str, int] = {k: 0 for k in self.topics}

    def update(self, topic: str, msg: Any, now_s: float) -> Optional[str]:
        """Take one message; return the rejection kind (``non_finite``, ``missing_key``,
        ``missing_index``, ``bad_value``) or None when accepted."""
        st = self.topics[topic]
        st.updates += 1
        raw: Dict[int, float] = {}
        try:
            tf = st.tf
            if tf is not None:
                tf = dict(tf)
                update_tf_buffer(tf, msg)
            for t in st.terms:
                raw[t.index] = t.raw(msg, tf)
        except KeyError:
            st.invalid = "missing_key"
            return st.invalid
        except IndexError:
            st.invalid = "missing_index"
            return st.invalid
        except ValueError as exc:
            st.invalid = "non_finite" if "non-finite" in str(exc) else "bad_value"
            return st.invalid
        except (TypeError, AttributeError):
            st.invalid = "bad_value"
            return st.invalid
        if not all(math.isfinite(v) for v in raw.values()):
            st.invalid = "non_finite"
            return st.invalid
        if st.tf is not None:
            st.tf = tf
        restart = st.rx_time is None or now_s - st.rx_time > self.stale_after_s
        for t in st.terms:
            v = raw[t.index]
            if t.derive.kind == "finite_difference":
                prev = None if restart else st.prev_raw.get(t.index)
                st.prev_raw[t.index] = v
                v = 0.0 if prev is None else (v - prev) / self.period_s
            st.values[t.index] = v
        st.rx_time = now_s
        st.invalid = None
        st.last_msg, st.last_msg_time = msg, now_s
        return None

    def all_updated(self) -> bool:
        """Every topic delivered a message (good or rejected) since the last :meth:`mark_step`."""
        return all(st.updates > self._step_marks[k] for k, st in self.topics.items())

    def mark_step(self) -> None:
        for k, st in self.topics.items():
            self._step_marks[k] = st.updates

    def newest_rx(self) -> Optional[float]:
        times = [st.rx_time for st in self.topics.values() if st.rx_time is not None]
        return max(times) if times else None

    def fault(self, now_s: float) -> Optional[str]:
        for topic, st in self.topics.items():
            if st.rx_time is None and st.invalid is None:
                return f"waiting for {topic}"
            if st.invalid is not None:
                return f"{st.invalid} on {topic}"
            age = now_s - st.rx_time
            if age > self.stale_after_s:
                return f"stale {topic} ({age * 1e3:.0f} ms old > {self.stale_after_s * 1e3:.0f} ms)"
        return None

    def assemble(self, now_s: float) -> Tuple[Optional[np.ndarray], Optional[str]]:
        """(obs float32 (n,), None) or (None, fault text)."""
        fault = self.fault(now_s)
        if fault:
            return None, fault
        raw = self._raw
        for st in self.topics.values():
            for idx, v in st.values.items():
                raw[idx] = v
        for t in self.term_terms:   # distance: from the other terms' raw values, as the env computes it
            raw[t.index] = derive_ops.apply_terms(t.derive.params, self._ref(t))
        self._obs[:] = raw * self._scales
        if not np.all(np.isfinite(self._obs)):
            return None, "non_finite observation after scaling"
        return self._obs, None

    def _ref(self, t: ObsTermPlan) -> Callable[[str], float]:
        p = t.derive.params
        by_name = dict(zip(p["a"] + p["b"], t.refs[0] + t.refs[1]))
        return lambda name: float(self._raw[by_name[name]])

    def replay_into(self, other: "ObservationAssembler") -> None:
        """Feed the newest message of each topic into ``other`` (used when swapping bundles)."""
        for topic, st in self.topics.items():
            if topic in other.topics and st.last_msg is not None:
                other.update(topic, st.last_msg, st.last_msg_time)


# ----------------------------------------------------------------------------- actions
def parse_safe(values: Sequence[Any], plan: ActPlan, io: Mapping[str, Any]) -> List[Any]:
    """Per-term safe action: parameter (if given) > io.yaml ``safe_action`` > 'zero'."""
    if values and len(values) != plan.size:
        raise SpecError(f"safe_action has {len(values)} entries, the bundle has {plan.size} action terms")
    out = []
    for j, t in enumerate(plan.terms):
        v = values[j] if values else (io["action"][j].get("safe_action", "zero"))
        if isinstance(v, str) and v.strip().lower() in SAFE_MODES:
            out.append(v.strip().lower())
            continue
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise SpecError(f"safe_action for '{t.name}' must be zero, hold or a number, got {v!r}") from None
        if not (math.isfinite(x) and t.limits[0] <= x <= t.limits[1]):
            raise SpecError(f"safe_action {x} for '{t.name}' is outside its limits {list(t.limits)}")
        out.append(x)
    return out


def parse_max_rate(values: Sequence[float], plan: ActPlan, io: Mapping[str, Any]) -> np.ndarray:
    """Per-term rate limit, units/s (0 = none): parameter (if given) > io.yaml ``max_rate`` > 0."""
    if values and len(values) != plan.size:
        raise SpecError(f"max_rate has {len(values)} entries, the bundle has {plan.size} action terms")
    out = []
    for j, t in enumerate(plan.terms):
        v = values[j] if values else io["action"][j].get("max_rate", 0.0)
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise SpecError(f"max_rate for '{t.name}' must be a number, got {v!r}") from None
        if not (math.isfinite(x) and x >= 0):
            raise SpecError(f"max_rate for '{t.name}' must be >= 0 (0 = no limit), got {x}")
        out.append(x)
    return np.array(out, dtype=np.float64)


class ActionShaper:
    """Network output -> commands: the training mapping, then rate limit and limits."""

    def __init__(self, plan: ActPlan, rate_hz: float, max_rate: np.ndarray, safe: Sequence[Any]) -> None:
        self.plan = plan
        self.lo = np.array([t.limits[0] for t in plan.terms])
        self.hi = np.array([t.limits[1] for t in plan.terms])
        self.scale = np.array([t.scale for t in plan.terms])
        self.offset = np.array([t.offset for t in plan.terms])
        self.max_step = np.where(max_rate > 0, max_rate / float(rate_hz), np.inf)
        self.safe_modes = list(safe)
        self.last: Optional[np.ndarray] = None
        self.rate_limited = 0
        self.clipped = 0

    def command(self, net_out: np.ndarray) -> np.ndarray:
        out = np.asarray(net_out).reshape(-1)
        if self.plan.discrete:
            idx = int(out[0])
            choices = self.plan.terms[0].choices
            if not 0 <= idx < len(choices):
                raise ValueError(f"discrete action {idx} is not an index into {len(choices)} choices")
            cmd = np.array([choices[idx]], dtype=np.float64)
        else:
            if out.size != self.plan.size:
                raise ValueError(f"network gave {out.size} actions, the descriptor has {self.plan.size}")
            cmd = self.offset + self.scale * np.clip(out.astype(np.float64), -1.0, 1.0)
        clipped = np.clip(cmd, self.lo, self.hi)
        if np.any(clipped != cmd):
            self.clipped += 1
        cmd = clipped
        if self.last is not None and np.any(np.isfinite(self.max_step)):
            last = np.where(np.isfinite(self.last), self.last, cmd)   # never sent: no rate limit yet
            limited = np.clip(cmd, last - self.max_step, last + self.max_step)
            if np.any(limited != cmd):
                self.rate_limited += 1
            cmd = np.clip(limited, self.lo, self.hi)
        return cmd

    def safe(self) -> np.ndarray:
        """The safe command per term. ``hold`` before anything was sent is NaN: "leave the actuator
        as it is" (:func:`fill_messages` then publishes nothing on that topic). Before, it fell back
        to 0, which for a gripper (open = value > 0) meant *close*: a node activated with a stale
        input closed the gripper on its first step."""
        out = []
        for j, mode in enumerate(self.safe_modes):
            if mode == "hold":
                out.append(self.last[j] if self.last is not None else math.nan)
            elif mode == "zero":
                out.append(0.0)
            else:
                out.append(float(mode))
        cmd = np.array(out, dtype=np.float64)
        return np.where(np.isfinite(cmd), np.clip(cmd, self.lo, self.hi), cmd)

    def commit(self, cmd: np.ndarray) -> None:
        self.last = np.array(cmd, dtype=np.float64)


def fill_messages(plan: ActPlan, cmd: np.ndarray, factories: Mapping[str, Callable[[], Any]]) -> Dict[str, Any]:
    """One message per action topic with every term's field set (types cast to the field's).

    A topic with a NaN term (a ``hold`` safe action before anything was sent) gets no message:
    a half-known command is not sent."""
    unknown = {t.topic for t, value in zip(plan.terms, cmd) if not math.isfinite(float(value))}
    msgs = {topic: factories[topic]() for topic in plan.topics if topic not in unknown}
    for t, value in zip(plan.terms, cmd):
        if t.topic in unknown:
            continue
        obj = msgs[t.topic]
        for step in t.path[:-1]:
            obj = getattr(obj, step.name)
        if t.leaf == "boolean":
            v: Any = bool(value > t.threshold)
        elif t.leaf in INTEGER:
            v = int(round(float(value)))
        else:
            v = float(value)
        setattr(obj, t.path[-1].name, v)
    return msgs


# ----------------------------------------------------------------------------- e-stop
class EStopLatch:
    """Latched once the e-stop input is asserted; cleared only by :meth:`reset` while released."""

    def __init__(self) -> None:
        self.latched = False
        self.asserted = False
        self.trips = 0

    def input(self, asserted: bool) -> bool:
        """Feed the e-stop input; return True when this call latched it."""
        self.asserted = bool(asserted)
        if self.asserted and not self.latched:
            self.latched = True
            self.trips += 1
            return True
        return False

    def reset(self) -> Tuple[bool, str]:
        if self.asserted:
            return False, "e-stop input is still asserted: release it (publish false) first"
        was = self.latched
        self.latched = False
        return True, "e-stop released" if was else "e-stop was not latched"


# ----------------------------------------------------------------------------- statistics
def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")


class LoopStats:
    """Rates, jitter, latency and overruns over a sliding window of steps."""

    def __init__(self, period_s: float, window: int = 2000) -> None:
        self.period_s = period_s
        self.ticks: deque = deque(maxlen=window)          # loop times (s)
        self.jitter: deque = deque(maxlen=window)         # |interval - period| (s), timer mode
        self.latency: deque = deque(maxlen=window)        # obs arrival -> action publish (s)
        self.compute: deque = deque(maxlen=window)        # step duration (s)
        self.steps = 0
        self.safe_steps = 0
        self.overruns = 0

    def tick(self, t_s: float, timer: bool) -> None:
        if self.ticks:
            interval = t_s - self.ticks[-1]
            if timer:
                self.jitter.append(abs(interval - self.period_s))
                if interval > 1.5 * self.period_s:  # a missed tick
                    self.overruns += 1
        self.ticks.append(t_s)

    def done(self, compute_s: float, latency_s: Optional[float], safe: bool) -> None:
        self.steps += 1
        self.compute.append(compute_s)
        if compute_s > self.period_s:
            self.overruns += 1
        if safe:
            self.safe_steps += 1
        elif latency_s is not None:
            self.latency.append(latency_s)

    def rate_hz(self, now_s: float, horizon_s: float = 2.0) -> float:
        recent = [t for t in self.ticks if now_s - t <= horizon_s]
        if len(recent) < 2:
            return 0.0
        return (len(recent) - 1) / (recent[-1] - recent[0]) if recent[-1] > recent[0] else 0.0

    def summary(self, now_s: float) -> Dict[str, float]:
        ms = 1e3
        return {
            "achieved_rate_hz": self.rate_hz(now_s),
            "latency_p50_ms": percentile(self.latency, 50) * ms,
            "latency_p99_ms": percentile(self.latency, 99) * ms,
            "jitter_p99_ms": percentile(self.jitter, 99) * ms,
            "compute_p99_ms": percentile(self.compute, 99) * ms,
            "overruns": self.overruns,
            "steps": self.steps,
            "safe_steps": self.safe_steps,
        }
