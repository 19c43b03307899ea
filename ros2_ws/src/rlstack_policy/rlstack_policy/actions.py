"""Actions (no rclpy): the network output to commands, safe actions, messages and the e-stop latch.

* :class:`ActionShaper` maps the network output to commands exactly as training did
  (``clip(offset + scale * clip(a, -1, 1), limits)`` or ``choices[a]``), then rate-limits and
  clips again; :meth:`ActionShaper.safe` gives the safe action (zero, hold or a value).
* :func:`fill_messages` builds one message per action topic.
* :class:`EStopLatch` latches the safe action until reset (and refuses a reset while the e-stop
  input is still asserted).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .messages import INTEGER, SpecError
from .plan import ActPlan

SAFE_MODES = ("zero", "hold")


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
