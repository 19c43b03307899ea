"""Velocity multiplexer core (no rclpy): several velocity sources, one command topic.

Modelled on twist_mux. Each input has a name, a topic, a priority and a timeout:

* An input is *fresh* while its last valid command is at most ``timeout_s`` old (``0``: fresh
  forever once it has sent one command).
* The fresh input with the highest priority *wins*; its commands are forwarded as they arrive,
  every other input's commands are dropped (masked). Priorities are distinct integers 1..255.
* An optional lock (std_msgs/Bool, e.g. a soft stop or a pause button) masks every input whose
  priority is at most the lock's priority while it is engaged: while its last value is true,
  and, with ``timeout_s > 0`` (a heartbeat), while no lock message came within the timeout
  (also before the first one).
* A command with a non-finite component is rejected (counted) and refreshes nothing.

When no input wins any more (the winner went stale, or the lock masked it), twist_mux just
stops publishing and leaves stopping to the base's own command watchdog. Here, with
``stop_on_idle`` (the default), the mux sends **one zero command** on that transition, then
stays silent: the base stops at once instead of coasting until its watchdog fires, and a
silent mux does not fight a driver-side watchdog or a teleop that bypasses the mux.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

Vec3 = Tuple[float, float, float]
Command = Tuple[Vec3, Vec3]          # (linear, angular)
ZERO: Command = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
PRIORITY_RANGE = (1, 255)


class MuxConfigError(ValueError):
    """A bad multiplexer configuration; the message is one line naming the input and the fix."""


@dataclass(frozen=True)
class MuxInput:
    name: str
    topic: str
    priority: int
    timeout_s: float


@dataclass(frozen=True)
class MuxLock:
    topic: str
    priority: int
    timeout_s: float = 0.0


@dataclass
class _State:
    last: Optional[float] = None        # time of the last valid command
    forwarded: int = 0
    masked: int = 0
    rejected: int = 0


def build_inputs(names: Sequence[str], topics: Sequence[str], priorities: Sequence[int],
                 timeouts: Sequence[float]) -> List[MuxInput]:
    """Parallel parameter lists -> inputs; raises :class:`MuxConfigError` on anything inconsistent."""
    n = len(names)
    if n == 0:
        raise MuxConfigError("input_names is empty: give at least one input")
    for label, seq in (("input_topics", topics), ("input_priorities", priorities), ("input_timeouts", timeouts)):
        if len(seq) != n:
            raise MuxConfigError(f"{label} has {len(seq)} entries, input_names has {n}: give one per input")
    inputs = [MuxInput(str(a), str(b), int(c), float(d)) for a, b, c, d in zip(names, topics, priorities, timeouts)]
    validate(inputs)
    return inputs


def validate(inputs: Sequence[MuxInput], lock: Optional[MuxLock] = None) -> None:
    lo, hi = PRIORITY_RANGE
    seen: Dict[str, str] = {}
    prios: Dict[int, str] = {}
    for i in inputs:
        if not i.name or not i.topic:
            raise MuxConfigError(f"input '{i.name}': a name and a topic are required")
        if i.name in seen:
            raise MuxConfigError(f"input name '{i.name}' appears twice: names must be unique")
        if i.topic in seen.values():
            raise MuxConfigError(f"input '{i.name}': topic {i.topic} is already another input's")
        seen[i.name] = i.topic
        if not lo <= i.priority <= hi:
            raise MuxConfigError(f"input '{i.name}': priority {i.priority} outside {lo}..{hi}")
        if i.priority in prios:
            raise MuxConfigError(f"inputs '{prios[i.priority]}' and '{i.name}' share priority {i.priority}: "
                                 "give each input its own")
        prios[i.priority] = i.name
        if not (math.isfinite(i.timeout_s) and 0.0 <= i.timeout_s <= 60.0):
            raise MuxConfigError(f"input '{i.name}': timeout {i.timeout_s} s outside 0..60 (0: never stale)")
    if lock is not None:
        if not 0 <= lock.priority <= hi:
            raise MuxConfigError(f"lock priority {lock.priority} outside 0..{hi}")
        if not (math.isfinite(lock.timeout_s) and 0.0 <= lock.timeout_s <= 60.0):
            raise MuxConfigError(f"lock timeout {lock.timeout_s} s outside 0..60 (0: no heartbeat)")


@dataclass
class VelocityMux:
    inputs: Sequence[MuxInput]
    lock: Optional[MuxLock] = None
    stop_on_idle: bool = True
    _state: Dict[str, _State] = field(default_factory=dict, init=False)
    _lock_value: bool = field(default=False, init=False)
    _lock_last: Optional[float] = field(default=None, init=False)
    _was_active: Optional[str] = field(default=None, init=False)
    idle_stops: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        validate(self.inputs, self.lock)
        self._by_name = {i.name: i for i in self.inputs}
        self._order = sorted(self.inputs, key=lambda i: -i.priority)
        self._state = {i.name: _State() for i in self.inputs}

    # ------------------------------------------------------------------ queries
    def locked(self, now: float) -> bool:
        if self.lock is None:
            return False
        if self._lock_value:
            return True
        return self.lock.timeout_s > 0 and (self._lock_last is None or now - self._lock_last > self.lock.timeout_s)

    def fresh(self, name: str, now: float) -> bool:
        inp, st = self._by_name[name], self._state[name]
        return st.last is not None and (inp.timeout_s == 0.0 or now - st.last <= inp.timeout_s)

    def active(self, now: float) -> Optional[str]:
        """The input that wins at ``now``, or None."""
        floor = self.lock.priority if self.locked(now) else 0
        for inp in self._order:
            if inp.priority <= floor:
                return None
            if self.fresh(inp.name, now):
                return inp.name
        return None

    def counts(self) -> Dict[str, Dict[str, int]]:
        return {n: {"forwarded": s.forwarded, "masked": s.masked, "rejected": s.rejected}
                for n, s in self._state.items()}

    # ------------------------------------------------------------------ events
    def offer(self, name: str, linear: Vec3, angular: Vec3, now: float) -> Optional[Command]:
        """A command on input ``name`` at ``now``: the command to publish, or None (masked/rejected)."""
        st = self._state[name]
        values = tuple(linear) + tuple(angular)
        if len(values) != 6 or not all(math.isfinite(float(v)) for v in values):
            st.rejected += 1
            return None
        st.last = now
        winner = self.active(now)
        if winner is not None:          # a step to no winner (a lock) is tick's to report
            self._was_active = winner
        if winner != name:
            st.masked += 1
            return None
        st.forwarded += 1
        return (tuple(float(v) for v in linear), tuple(float(v) for v in angular))  # type: ignore[return-value]

    def set_lock(self, value: bool, now: float) -> Optional[Command]:
        self._lock_value = bool(value)
        self._lock_last = now
        return self.tick(now)

    def tick(self, now: float) -> Optional[Command]:
        """Call periodically: one zero command when the mux goes from some winner to none."""
        winner = self.active(now)
        went_idle = self._was_active is not None and winner is None
        self._was_active = winner
        if went_idle and self.stop_on_idle:
            self.idle_stops += 1
            return ZERO
        return None
