"""Command validation, limits, watchdog and rejection accounting (pure Python, no rclpy).

Everything between a command message arriving and the backend call lives here, so it can
be unit-tested without ROS:

* :class:`VelocityLimiter` clips a base velocity command to speed limits and ramps the
  applied velocity towards it under acceleration limits, one control step at a time.
* ``validate_*`` functions turn raw command values into backend arguments or raise
  :class:`CommandRejected` with a short ``kind`` (``non_finite``, ``wrong_length``,
  ``unknown_joint``, ``out_of_range``, ``duplicate_joint``, ``empty``).
* :class:`Watchdog` tracks, per command channel, when the last command arrived and
  reports each channel once when it goes stale.
* :class:`RejectLog` counts rejections by ``(channel, kind)`` and decides when a warning
  may be logged (once per kind per ``period_s``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

__all__ = [
    "CommandRejected",
    "JointBounds",
    "RejectLog",
    "VelocityLimiter",
    "Watchdog",
    "clip_ee_delta",
    "hold_targets",
    "validate_joint_targets",
    "validate_scalar",
    "validate_twist",
]


class CommandRejected(ValueError):
    """A command that must not reach the simulator; ``kind`` is its counter name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


def _clip(value: float, limit: float) -> float:
    return max(-limit, min(limit, value))


# --------------------------------------------------------------------------- base velocity
def validate_twist(linear_x: float, angular_z: float, others: Sequence[float] = ()) -> Tuple[float, float]:
    """Check a diff-drive command; ``others`` are the unused Twist components.

    Only ``linear.x`` and ``angular.z`` drive a differential base; the other components are
    ignored, but a NaN/inf anywhere in the message rejects it (it is garbage).
    """
    if not _finite(linear_x, angular_z, *others):
        raise CommandRejected("non_finite", f"velocity command has NaN/inf: ({linear_x}, {angular_z}, {list(others)})")
    return float(linear_x), float(angular_z)


class VelocityLimiter:
    """Speed clipping plus acceleration-limited ramping of a (linear, angular) command.

    :meth:`set_target` clips the requested velocity to ``max_linear``/``max_angular``
    (returns True when it had to clip); :meth:`update` moves the applied velocity towards
    the target by at most ``max_*_accel * dt`` and returns it. A zero acceleration limit
    means "no ramp" (jump to the target).
    """

    def __init__(self, max_linear: float, max_angular: float, max_linear_accel: float,
                 max_angular_accel: float) -> None:
        for name, v in (("max_linear", max_linear), ("max_angular", max_angular),
                        ("max_linear_accel", max_linear_accel), ("max_angular_accel", max_angular_accel)):
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {v}")
        self.max_linear = float(max_linear)
        self.max_angular = float(max_angular)
        self.max_linear_accel = float(max_linear_accel)
        self.max_angular_accel = float(max_angular_accel)
        self.target = (0.0, 0.0)
        self.current = (0.0, 0.0)

    def set_target(self, linear: float, angular: float) -> bool:
        clipped = (_clip(linear, self.max_linear), _clip(angular, self.max_angular))
        self.target = clipped
        return clipped != (linear, angular)

    def stop(self) -> None:
        """Target zero (the ramp still applies, as for any command)."""
        self.target = (0.0, 0.0)

    def reset(self) -> None:
        """Robot at rest, no command (after a simulator reset)."""
        self.target = (0.0, 0.0)
        self.current = (0.0, 0.0)

    @property
    def settled(self) -> bool:
        """True when the applied velocity equals the target (no ramp in progress)."""
        return self.current == self.target

    def update(self, dt: float) -> Tuple[float, float]:
        (v, w), (tv, tw) = self.current, self.target
        v = tv if self.max_linear_accel == 0 else v + _clip(tv - v, self.max_linear_accel * dt)
        w = tw if self.max_angular_accel == 0 else w + _clip(tw - w, self.max_angular_accel * dt)
        # land exactly on the target (no float crumbs that keep the ramp "active")
        if abs(v - tv) < 1e-12:
            v = tv
        if abs(w - tw) < 1e-12:
            w = tw
        self.current = (v, w)
        return self.current


# --------------------------------------------------------------------------- joints
@dataclass(frozen=True)
class JointBounds:
    lower: float
    upper: float


def validate_joint_targets(names: Sequence[str], positions: Sequence[float],
                           controllable: Mapping[str, JointBounds]) -> Tuple[List[str], List[float]]:
    """Check a joint-target command against the position-controlled joints.

    :param controllable: ``name -> JointBounds`` of the joints accepting targets
    :raises CommandRejected: empty, length mismatch, duplicate or unknown joint, NaN/inf,
        or a target outside the joint limits (rejected, not clipped: the sender chose it)
    """
    names, positions = list(names), [float(p) for p in positions]
    if not names:
        raise CommandRejected("empty", "joint target command names no joints")
    if len(names) != len(positions):
        raise CommandRejected("wrong_length", f"{len(names)} joint names but {len(positions)} positions")
    if len(set(names)) != len(names):
        raise CommandRejected("duplicate_joint", f"duplicate joint names in {names}")
    unknown = [n for n in names if n not in controllable]
    if unknown:
        raise CommandRejected("unknown_joint",
                              f"unknown or not position-controlled joint(s) {unknown}; "
                              f"controllable: {sorted(controllable)}")
    if not _finite(*positions):
        raise CommandRejected("non_finite", f"joint targets have NaN/inf: {positions}")
    for n, p in zip(names, positions):
        b = controllable[n]
        if not b.lower - 1e-9 <= p <= b.upper + 1e-9:
            raise CommandRejected("out_of_range", f"target {p:.4g} for '{n}' outside [{b.lower:.4g}, {b.upper:.4g}]")
    return names, positions


def hold_targets(names: Sequence[str], positions: Sequence[float],
                 controllable: Mapping[str, JointBounds]) -> Tuple[List[str], List[float]]:
    """Targets that hold the controllable joints where they are (clipped into their limits)."""
    out_n, out_p = [], []
    for n, p in zip(names, positions):
        b = controllable.get(n)
        if b is None or not math.isfinite(p):
            continue
        out_n.append(n)
        out_p.append(min(max(float(p), b.lower), b.upper))
    return out_n, out_p


def clip_ee_delta(dx: float, dy: float, dz: float, max_step: float) -> Tuple[Tuple[float, float, float], bool]:
    """Reject NaN/inf; scale the delta down to length ``max_step`` (m). Returns (delta, clipped)."""
    if not _finite(dx, dy, dz):
        raise CommandRejected("non_finite", f"end-effector delta has NaN/inf: ({dx}, {dy}, {dz})")
    norm = math.sqrt(dx * dx + dy * dy + dz * dz)
    if norm > max_step > 0:
        s = max_step / norm
        return (dx * s, dy * s, dz * s), True
    return (float(dx), float(dy), float(dz)), False


def validate_scalar(value: float, lower: float, upper: float, what: str) -> float:
    """A finite value within ``[lower, upper]`` or :class:`CommandRejected`."""
    if not _finite(value):
        raise CommandRejected("non_finite", f"{what} is {value}")
    if not lower <= value <= upper:
        raise CommandRejected("out_of_range", f"{what} {value:.4g} outside [{lower:.4g}, {upper:.4g}]")
    return float(value)


# --------------------------------------------------------------------------- watchdog
class Watchdog:
    """Per-channel command timeout.

    Channel states: ``idle`` (no command since the last reset), ``active`` (fresh
    command), ``timed_out`` (stale: the caller has put the channel in its safe state).
    :meth:`poll` returns the channels that went stale since the last poll, each once.
    A timeout of 0 disables the watchdog.
    """

    def __init__(self, timeout_s: float, channels: Iterable[str] = ()) -> None:
        if not (math.isfinite(timeout_s) and timeout_s >= 0):
            raise ValueError(f"timeout must be finite and >= 0, got {timeout_s}")
        self.timeout_s = float(timeout_s)
        self._last: Dict[str, Optional[float]] = {c: None for c in channels}
        self._state: Dict[str, str] = {c: "idle" for c in channels}
        self.timeouts = 0

    @property
    def channels(self) -> Tuple[str, ...]:
        return tuple(self._state)

    def add(self, channel: str) -> None:
        self._last.setdefault(channel, None)
        self._state.setdefault(channel, "idle")

    def feed(self, channel: str, now: float) -> None:
        self._last[channel] = now
        self._state[channel] = "active"

    def state(self, channel: str) -> str:
        return self._state[channel]

    def deadline(self) -> Optional[float]:
        """Earliest time at which an active channel goes stale (None: nothing pending)."""
        if self.timeout_s == 0:
            return None
        times = [t for c, t in self._last.items() if self._state[c] == "active" and t is not None]
        return min(times) + self.timeout_s if times else None

    def poll(self, now: float) -> List[str]:
        if self.timeout_s == 0:
            return []
        expired = []
        for c, t in self._last.items():
            if self._state[c] == "active" and t is not None and now - t >= self.timeout_s - 1e-12:
                self._state[c] = "timed_out"
                expired.append(c)
        self.timeouts += len(expired)
        return expired

    def reset(self) -> None:
        for c in self._state:
            self._state[c] = "idle"
            self._last[c] = None

    def summary(self) -> str:
        return ", ".join(f"{c}={s}" for c, s in self._state.items()) or "no channels"


# --------------------------------------------------------------------------- rejections
class RejectLog:
    """Counts rejected commands by ``channel/kind`` and throttles their warnings."""

    def __init__(self, period_s: float = 5.0) -> None:
        self.period_s = period_s
        self.counts: Dict[str, int] = {}
        self._last_log: Dict[str, float] = {}

    def record(self, channel: str, kind: str, now: float) -> bool:
        """Count one rejection; return True if a warning should be logged now."""
        key = f"{channel}/{kind}"
        self.counts[key] = self.counts.get(key, 0) + 1
        last = self._last_log.get(key)
        if last is None or now - last >= self.period_s:
            self._last_log[key] = now
            return True
        return False

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class BaseStallMonitor:
    """Notices a base that is commanded to move but does not: applied velocity vs measured twist.

    Why: a fetch once stood still for minutes while navigation commanded 0.15 m/s and the bridge
    applied it (wheel speeds ~0.003 rad/s, odometry frozen, sim time running); it did not
    reproduce in process. The bridge checks this once per diagnostics period, warns with what it
    applied and what the wheels did, and re-sends the latched wheel command (a lost motor
    command is the one cause it can fix; anything else is in the report).

    :param stall_s: how long a commanded-but-still base must last to count, s
    :param min_linear: |applied linear| above this counts as "commanded to move", m/s
    :param min_angular: |applied angular| above this counts too, rad/s
    """

    def __init__(self, stall_s: float = 3.0, min_linear: float = 0.05, min_angular: float = 0.2) -> None:
        self.stall_s, self.min_linear, self.min_angular = float(stall_s), float(min_linear), float(min_angular)
        self._since: Optional[float] = None
        self.reported = False
        self.stalls = 0

    def update(self, applied: Tuple[float, float], measured: Tuple[float, float], now: float) -> bool:
        """True once per stall, when it has lasted ``stall_s``; resets when the base moves or rests."""
        commanded = abs(applied[0]) > self.min_linear or abs(applied[1]) > self.min_angular
        moving = abs(measured[0]) > 0.2 * max(abs(applied[0]), self.min_linear) or \
            abs(measured[1]) > 0.2 * max(abs(applied[1]), self.min_angular)
        if not commanded or moving:
            self._since, self.reported = None, False
            return False
        if self._since is None:
            self._since = now
        if not self.reported and now - self._since >= self.stall_s:
            self.reported = True
            self.stalls += 1
            return True
        return False


class GripperStallMonitor:
    """Notices a gripper commanded open whose fingers neither open nor move.

    Why: about one put-down in ten in ROS runs, both finger motors pushed open at their full force
    while the fingers stood still at the cube's width (docs/reference/mission.md, "the put-down jam"); it
    never happened in process. The bridge checks once per diagnostics period and, once per stall,
    reports what the simulator says touches the fingers, so the next jam, wherever it happens,
    leaves its cause in the log.

    :param stall_s: how long the fingers must stand still (within ``min_motion``) to count, s
    :param min_motion: a change of the finger opening larger than this is motion, m
    :param open_margin: an opening within this of fully open counts as open, m
    """

    def __init__(self, stall_s: float = 1.0, min_motion: float = 0.001, open_margin: float = 0.005) -> None:
        self.stall_s, self.min_motion, self.open_margin = float(stall_s), float(min_motion), float(open_margin)
        self._since: Optional[float] = None
        self._width = 0.0
        self.reported = False
        self.stalls = 0

    def update(self, commanded_open: Optional[bool], width: float, open_width: float, now: float) -> bool:
        """True once per stall, when the fingers, commanded open, have stood still short of open for
        ``stall_s``; resets when they open, move or are commanded closed."""
        if commanded_open is not True or width >= open_width - self.open_margin:
            self._since, self.reported = None, False
            return False
        if self._since is None or abs(width - self._width) > self.min_motion:
            self._since, self._width, self.reported = now, width, False
            return False
        if not self.reported and now - self._since >= self.stall_s:
            self.reported = True
            self.stalls += 1
            return True
        return False
