"""Machine-readable ``derive`` operations of observation terms: one implementation for training and serving.

An observation term's ``source.derive`` (see :mod:`rlstack_bundle.terms`) says how the raw
value is computed from what its ``source`` reads. It is either absent (the field's value as
is) or a mapping with an ``op`` from this closed set:

=====================  ==========================  ==========================================================
op                     parameters                  raw value
=====================  ==========================  ==========================================================
``finite_difference``  -                           (value - previous value) / control period (consecutive messages)
``sum``                -                           sum of the field over every comma-separated ``source.key``
``sin_kyaw``           ``k`` (number)              sin(k * yaw) of the quaternion the field names
``cos_kyaw``           ``k`` (number)              cos(k * yaw) of the quaternion the field names
``tf_position``        ``parent``, ``child``,      ``axis`` (x, y or z) of the position of frame ``child`` in
                       ``axis``                    frame ``parent``, composed along the transform chain of a
                                                   ``tf2_msgs/msg/TFMessage`` topic (field ``transforms``)
``offset_minus``       ``constant`` (number)       constant - value of the field
``distance``           ``a``, ``b`` (lists of      Euclidean norm of (raw a - raw b), where ``a`` and ``b`` name
                       term names, same length)    other observation terms (their raw values, before scale);
                                                   the term's ``source`` names the topic it depends on
=====================  ==========================  ==========================================================

The in-process envs compute their observations through :func:`apply` and :func:`raw_vector`
(``rlstack_learning.envs.lift``), and the policy node (``rlstack_policy.core``) through the
same functions, so the two cannot diverge. Pure Python + math: no numpy needed, imported by
the policy node at run time. The frame math (quaternions, TF chains) is in
:mod:`rlstack_bundle.frames`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

# The frame math the ops use (tf_position composes a TF chain; sin/cos_kyaw take a yaw), re-exported
# here so that a term evaluator needs one module.
from .frames import Quat, Vec3, compose, quat_mul, quat_rotate, walk_up, yaw  # noqa: F401

#: op -> required parameters (besides ``op``)
OPS: Dict[str, Tuple[str, ...]] = {
    "finite_difference": (),
    "sum": (),
    "sin_kyaw": ("k",),
    "cos_kyaw": ("k",),
    "tf_position": ("parent", "child", "axis"),
    "offset_minus": ("constant",),
    "distance": ("a", "b"),
}
#: ops whose value comes from other terms (evaluated after every message term)
TERM_OPS = ("distance",)
AXES = ("x", "y", "z")



def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check(derive: Any, term_names: Optional[Sequence[str]] = None, name: str = "?") -> List[str]:
    """Problems with one term's ``derive`` ([] = fine). Free text is accepted only for the legacy
    forms the policy node understands (``finite difference ...``, ``sum of ...``, ``sin(k * yaw)``)."""
    if derive is None or isinstance(derive, str):
        return []
    if not isinstance(derive, Mapping):
        return [f"derive of '{name}' must be a mapping with 'op' (or legacy text), got {type(derive).__name__}"]
    op = derive.get("op")
    if op not in OPS:
        return [f"derive of '{name}': unknown op {op!r}; ops: {', '.join(OPS)}"]
    problems = []
    need = OPS[op]
    extra = sorted(set(derive) - set(need) - {"op"})
    if extra:
        problems.append(f"derive {op} of '{name}': unknown parameter(s) {extra} (expects {list(need) or 'none'})")
    missing = [k for k in need if k not in derive]
    if missing:
        return problems + [f"derive {op} of '{name}': missing parameter(s) {missing}"]
    if op in ("sin_kyaw", "cos_kyaw") and not _number(derive["k"]):
        problems.append(f"derive {op} of '{name}': k must be a finite number, got {derive['k']!r}")
    if op == "offset_minus" and not _number(derive["constant"]):
        problems.append(f"derive offset_minus of '{name}': constant must be a finite number, "
                        f"got {derive['constant']!r}")
    if op == "tf_position":
        if derive["axis"] not in AXES:
            problems.append(f"derive tf_position of '{name}': axis must be x, y or z, got {derive['axis']!r}")
        for k in ("parent", "child"):
            if not (isinstance(derive[k], str) and derive[k]):
                problems.append(f"derive tf_position of '{name}': {k} must be a frame name, got {derive[k]!r}")
    if op == "distance":
        a, b = derive["a"], derive["b"]
        if not (isinstance(a, list) and isinstance(b, list) and a and len(a) == len(b)
                and all(isinstance(x, str) for x in a + b)):
            problems.append(f"derive distance of '{name}': a and b must be equally long non-empty lists of term names")
        elif term_names is not None:
            unknown = [x for x in a + b if x not in term_names]
            if unknown:
                problems.append(f"derive distance of '{name}': unknown term(s) {unknown}")
            elif name in a + b:
                problems.append(f"derive distance of '{name}': must not refer to itself")
    return problems


def op_of(derive: Any) -> Optional[str]:
    return derive.get("op") if isinstance(derive, Mapping) else None


# ----------------------------------------------------------------------------- the operations
def apply(derive: Any, value: Any) -> float:
    """A message op on the value its source read: a number, a sequence of numbers (``sum``), a
    quaternion (x, y, z, w) (``sin_kyaw``/``cos_kyaw``) or a position (``tf_position``)."""
    op = op_of(derive)
    if op is None or op == "finite_difference":  # finite differences need history: the caller keeps it
        return float(value)
    if op == "sum":
        return float(sum(float(v) for v in value))
    if op == "sin_kyaw":
        return math.sin(float(derive["k"]) * yaw(value))
    if op == "cos_kyaw":
        return math.cos(float(derive["k"]) * yaw(value))
    if op == "tf_position":
        return float(value[AXES.index(derive["axis"])])
    if op == "offset_minus":
        return float(derive["constant"]) - float(value)
    raise ValueError(f"derive op {op!r} is not a message op")


def apply_terms(derive: Mapping[str, Any], raw: Callable[[str], float]) -> float:
    """A term op (``distance``) from the raw values of other terms (``raw(name)``)."""
    op = op_of(derive)
    if op == "distance":
        return math.sqrt(sum((raw(a) - raw(b)) ** 2 for a, b in zip(derive["a"], derive["b"])))
    raise ValueError(f"derive op {op!r} is not a term op")


def raw_vector(terms: Sequence[Any], source_values: Mapping[str, Any]) -> List[float]:
    """Raw observation (term order) of ``terms`` (ObsTerm) from what each source reads
    (``source_values[name]``, before its derive); term ops computed from the results."""
    out: Dict[str, float] = {}
    for t in terms:
        if op_of(t.source.derive) not in TERM_OPS:
            out[t.name] = apply(t.source.derive, source_values[t.name])
    for t in terms:
        if op_of(t.source.derive) in TERM_OPS:
            out[t.name] = apply_terms(t.source.derive, out.__getitem__)
    return [out[t.name] for t in terms]
