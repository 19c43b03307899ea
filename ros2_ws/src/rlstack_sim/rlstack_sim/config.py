"""Bridge configuration checks and scheduling helpers (pure Python, no rclpy)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

__all__ = ["MODES", "ConfigError", "RateMeter", "check_choice", "every_n_steps", "steps_per_control"]

#: realtime: wall-clock paced; fast: as fast as possible; lockstep: only on the step service.
MODES = ("realtime", "fast", "lockstep")


class ConfigError(ValueError):
    """A parameter combination the bridge cannot run with (one-line message, exit 2)."""


def check_choice(name: str, value: str, valid: Sequence[str]) -> str:
    if value not in valid:
        raise ConfigError(f"unknown {name} '{value}'; valid {name}s: {', '.join(valid)}")
    return value


def steps_per_control(physics_rate_hz: float, control_rate_hz: float) -> int:
    """Physics steps per control step; ConfigError unless the control rate divides the physics rate."""
    ratio = physics_rate_hz / control_rate_hz
    k = int(round(ratio))
    if k < 1 or abs(ratio - k) > 1e-9 * ratio:
        divisors = [physics_rate_hz / n for n in range(1, 13) if (physics_rate_hz / n).is_integer()]
        raise ConfigError(
            f"control_rate_hz {control_rate_hz:g} does not divide physics_rate_hz {physics_rate_hz:g}; "
            f"use physics_rate_hz / k, e.g. {', '.join(f'{d:g}' for d in divisors)}")
    return k


def every_n_steps(control_rate_hz: float, rate_hz: float) -> Optional[int]:
    """Publish every N control steps to approximate ``rate_hz`` (None when rate_hz <= 0: off).

    Rates above the control rate are capped at one publication per control step.
    """
    if rate_hz <= 0:
        return None
    return max(1, int(round(control_rate_hz / rate_hz)))


@dataclass
class RateMeter:
    """Events per second over the window since the last :meth:`sample`."""

    count: int = 0
    _last_count: int = 0
    _last_time: Optional[float] = None

    def tick(self, n: int = 1) -> None:
        self.count += n

    def sample(self, now: float) -> float:
        """Rate since the previous sample (0.0 on the first call)."""
        rate = 0.0
        if self._last_time is not None and now > self._last_time:
            rate = (self.count - self._last_count) / (now - self._last_time)
        self._last_count, self._last_time = self.count, now
        return rate if math.isfinite(rate) else 0.0
