"""Compile a bundle's IO descriptor (``io.yaml``) into plans (no rclpy).

* :class:`ObsPlan`: for every observation topic, the terms it feeds and, per term, the compiled
  field path(s), ``derive`` and ``scale``;
* :class:`ActPlan`: for every action topic, the terms and the field each one sets;
* :func:`descriptor_topics` / :func:`wiring_mismatch`: the quick checks of a bundle swap.

``source.derive`` is either a machine-readable mapping ``{op: ..., params}`` (the closed set of
:mod:`rlstack_bundle.derive`, evaluated with that module's functions, which the training envs
use too) or one of the legacy texts (``finite difference ...``, ``sum of ...``,
``sin(k * yaw)``, ``cos(k * yaw)``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from rlstack_bundle import derive as derive_ops  # pure Python: the same operations the envs use
from rlstack_bundle.terms import IO_FORMAT

from .messages import SpecError, _Step, _normalise_type, _quat, _split_type, compile_path, read_path, ros_fields


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
class ImagePlan:
    """One image observation term: the topic (after remapping) and its preprocessing spec."""

    spec: Any                # rlstack_bundle.images.ImageSpec
    topic: str
    descriptor_topic: str


@dataclass
class ObsPlan:
    terms: List[ObsTermPlan]
    topics: Dict[str, str]   # topic -> message type, in first-use order
    images: List[ImagePlan] = field(default_factory=list)

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
                raise SpecError(f"target field '{tgt['field']}' selects a sequence element; "
                                "targets must be plain fields")
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
    images = []
    for k, d in enumerate(io.get("image_observation") or []):
        from rlstack_bundle.images import IMAGE_MSG_TYPE, ImageSpec

        try:
            spec = ImageSpec.from_dict(d)
        except ValueError as exc:
            raise SpecError(f"image_observation[{k}]: {exc}") from None
        topic = remaps.get(spec.topic, spec.topic)
        if topic in obs_topics:
            raise SpecError(f"image_observation[{k}] '{spec.name}': topic {topic} is also read by a scalar term")
        _check_types(obs_topics, topic, IMAGE_MSG_TYPE, f"image_observation[{k}] '{spec.name}'")
        images.append(ImagePlan(spec, topic, spec.topic))
    return ObsPlan(obs_terms, obs_topics, images), ActPlan(act_terms, act_topics, discrete)


def descriptor_topics(io: Mapping[str, Any], remaps: Mapping[str, str] = None) -> Tuple[Dict[str, str], Dict[str, str]]:
    """(observation topic -> type, action topic -> type) of a descriptor, after remapping; no field checks."""
    remaps = dict(remaps or {})
    out: Tuple[Dict[str, str], Dict[str, str]] = ({}, {})
    for d, section, key in ((out[0], "observation", "source"), (out[1], "action", "target")):
        for t in io.get(section) or []:
            src = (t or {}).get(key) or {}
            if isinstance(src.get("topic"), str):
                d.setdefault(remaps.get(src["topic"], src["topic"]), str(src.get("type")))
    for t in io.get("image_observation") or []:
        src = (t or {}).get("source") or {}
        if isinstance(src.get("topic"), str):
            out[0].setdefault(remaps.get(src["topic"], src["topic"]), str(src.get("type")))
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
