"""Observation and action terms, declared once per task.

A task lists its :class:`ObsTerm` and :class:`ActTerm` objects; from that one list

* the environment builds its Gymnasium spaces and applies the scales,
* the policy bundle's IO descriptor (``io.yaml``) is generated (:func:`io_descriptor`),
* a policy node wires its subscriptions and publishers (it reads ``io.yaml``).

Conventions (also written into every ``io.yaml``):

* network input ``obs[i] = scale_i * raw_i`` where ``raw_i`` is the SI value read from
  ``source`` (topic + field + key); observation normalisation is folded into the ONNX
  graph, so the node does nothing else.
* a value that is not read as is has a machine-readable ``source.derive``: a mapping with an
  ``op`` from the closed set of :mod:`rlstack_bundle.derive` (``tf_position``, ``sum``,
  ``sin_kyaw``, ``cos_kyaw``, ``offset_minus``, ``distance``, ``finite_difference``), which
  the envs and the policy node both evaluate with that module's functions;
* network output ``action[j]`` lies in ``[-1, 1]`` (continuous); the command sent is
  ``clip(offset_j + scale_j * action[j], limits_j)`` in the term's unit. Discrete
  actions (DQN) output an index into ``choices`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import derive as _derive

#: Version tag of the IO descriptor written into ``io.yaml``.
IO_FORMAT = "rlstack-policy-io/1"


@dataclass(frozen=True)
class Source:
    """Where a policy node reads a value at deployment.

    :param topic: absolute ROS topic name
    :param msg_type: ROS message type, ``pkg/msg/Name``
    :param field: message field (dotted path), e.g. ``position`` or ``poses[].position.x``
    :param key: element selector inside an array field (a joint name, an object name)
    :param derive: how the value is computed from the field, if not read as is: a mapping
        ``{"op": ..., params}`` (see :mod:`rlstack_bundle.derive`; build it with :func:`derive`),
        or, for action targets and legacy observation terms, text (``open = value > 0``,
        ``finite difference ...``)
    """

    topic: str
    msg_type: str
    field: str
    key: Optional[str] = None
    derive: Union[None, str, Mapping[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        d = {"topic": self.topic, "type": self.msg_type, "field": self.field}
        if self.key is not None:
            d["key"] = self.key
        if isinstance(self.derive, Mapping):
            d["derive"] = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.derive.items()}
        elif self.derive is not None:
            d["derive"] = self.derive
        return d


def derive(op: str, **params: Any) -> Dict[str, Any]:
    """A machine-readable derive: ``derive("tf_position", parent="world", child="tool", axis="x")``."""
    d = {"op": op, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()}}
    problems = _derive.check(d)
    if problems:
        raise ValueError("; ".join(problems))
    return d


@dataclass(frozen=True)
class ObsTerm:
    """One scalar observation.

    :param name: unique, snake_case
    :param unit: SI unit of the raw value (``m``, ``m/s``, ``rad``, ``rad/s``, ``1``)
    :param frame: frame the value is expressed in
    :param source: deployment source (see :class:`Source`)
    :param scale: network input = scale * raw
    :param noise_std: observation-noise std (raw units) used by domain randomisation
    :param description: one line for humans
    """

    name: str
    unit: str
    frame: str
    source: Source
    scale: float = 1.0
    noise_std: float = 0.0
    description: str = ""


@dataclass(frozen=True)
class ActTerm:
    """One scalar action.

    :param name: unique, snake_case
    :param unit: SI unit of the command
    :param target: deployment target topic/field (``key`` unused)
    :param limits: (low, high) of the command in ``unit``; commands are clipped to it
    :param scale: command = offset + scale * action (action in [-1, 1])
    :param choices: discrete actions only: command value of each index
    :param safe_action: what a policy node sends for this term when it stops or faults:
        ``"zero"``, ``"hold"`` (its last command) or a number in ``unit`` within ``limits``;
        ``None`` writes nothing into ``io.yaml`` (the node's default: zero)
    """

    name: str
    unit: str
    target: Source
    limits: Tuple[float, float]
    scale: float = 1.0
    offset: float = 0.0
    choices: Optional[Tuple[float, ...]] = None
    description: str = ""
    safe_action: Union[None, str, float] = None


def check_terms(obs: Sequence[ObsTerm], act: Sequence[ActTerm]) -> None:
    """Raise ``ValueError`` for duplicate names or bad limits/scales."""
    for kind, terms in (("observation", obs), ("action", act)):
        names = [t.name for t in terms]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate {kind} term names: {sorted(dup)}")
        for t in terms:
            if not t.scale or t.scale != t.scale:
                raise ValueError(f"{kind} term '{t.name}': scale must be non-zero, got {t.scale}")
    obs_names = [t.name for t in obs]
    for t in obs:
        problems = _derive.check(t.source.derive, obs_names, t.name)
        if problems:
            raise ValueError("; ".join(problems))
        if _derive.op_of(t.source.derive) == "distance":
            refs = t.source.derive["a"] + t.source.derive["b"]
            bad = [r for r in refs if _derive.op_of(obs[obs_names.index(r)].source.derive) in _derive.TERM_OPS]
            if bad:
                raise ValueError(f"derive distance of '{t.name}': refers to term op term(s) {bad}")
    for t in act:
        lo, hi = t.limits
        if not lo < hi:
            raise ValueError(f"action term '{t.name}': limits must satisfy low < high, got {t.limits}")
        problem = safe_action_problem(t.safe_action, t.limits)
        if problem:
            raise ValueError(f"action term '{t.name}': {problem}")


#: symbolic safe actions a policy node implements (``rlstack_policy.core.SAFE_MODES``)
SAFE_MODES = ("zero", "hold")


def safe_action_problem(value: Any, limits: Sequence[float]) -> Optional[str]:
    """Why ``value`` is not a valid ``safe_action`` for a term with these limits (None = fine or absent)."""
    if value is None or (isinstance(value, str) and value in SAFE_MODES):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value \
            and float(limits[0]) <= float(value) <= float(limits[1]):
        return None
    return f"safe_action must be one of {', '.join(SAFE_MODES)} or a number within {list(limits)}, got {value!r}"


def io_descriptor(
    task: str,
    env_id: str,
    control_rate_hz: float,
    obs: Sequence[ObsTerm],
    act: Sequence[ActTerm],
    discrete: bool,
    notes: Sequence[str] = (),
    images: Sequence[Any] = (),
) -> Dict[str, Any]:
    """The ``io.yaml`` content for a bundle trained on these terms (``images``: the
    :class:`rlstack_bundle.images.ImageSpec` terms of a pixel policy, one ONNX input each)."""
    check_terms(obs, act)
    from .images import check_term

    image_terms = [im.to_dict() for im in images]
    for d in image_terms:
        problems = check_term(d)
        if problems:
            raise ValueError("; ".join(problems))
    observation: List[Dict[str, Any]] = []
    for i, t in enumerate(obs):
        observation.append({
            "index": i, "name": t.name, "unit": t.unit, "frame": t.frame, "scale": float(t.scale),
            "source": t.source.to_dict(), "description": t.description,
        })
    action: List[Dict[str, Any]] = []
    for j, t in enumerate(act):
        a = {
            "index": j, "name": t.name, "unit": t.unit, "target": t.target.to_dict(),
            "limits": [float(t.limits[0]), float(t.limits[1])], "description": t.description,
        }
        if discrete:
            a["choices"] = [float(c) for c in t.choices]
        else:
            a["scale"] = float(t.scale)
            a["offset"] = float(t.offset)
        if t.safe_action is not None:
            a["safe_action"] = t.safe_action if isinstance(t.safe_action, str) else float(t.safe_action)
        action.append(a)
    out = {
        "format": IO_FORMAT,
        "task": task,
        "env_id": env_id,
        "control_rate_hz": float(control_rate_hz),
        "model": {
            "file": "policy.onnx",
            "input": {"name": "obs", "shape": [None, len(obs)], "dtype": "float32"},
            "output": (
                {"name": "action", "shape": [None], "dtype": "int64", "kind": "discrete",
                 "n": len(act[0].choices)}
                if discrete else
                {"name": "action", "shape": [None, len(act)], "dtype": "float32", "kind": "continuous",
                 "range": [-1.0, 1.0]}
            ),
            "normalization": "folded into the ONNX graph (feed raw scaled observations)",
        },
        "conventions": {
            "observation": "obs[index] = scale * value(source); SI units",
            "action": ("command = choices[action]" if discrete else
                       "command = clip(offset + scale * clip(action, -1, 1), limits)"),
        },
        "observation": observation,
        "action": action,
        "notes": list(notes),
    }
    if image_terms:
        out["model"]["image_inputs"] = [
            {"name": d["input"], "shape": [None, d["stack"]["depth"] * (1 if d["encoding"] == "mono8" else 3),
                                           d["resize"]["height"], d["resize"]["width"]], "dtype": "uint8"}
            for d in image_terms]
        out["model"]["normalization"] = ("folded into the ONNX graph (feed raw scaled observations; "
                                         "images as uint8 0..255)")
        out["conventions"]["image"] = ("image_observation[k] -> ONNX input 'input': crop, area resize, channels "
                                       "first, 'depth' frames 'stride' control periods apart by stamp, oldest first "
                                       "(rlstack_bundle.images.preprocess / FrameStack)")
        out["image_observation"] = image_terms
    return out
