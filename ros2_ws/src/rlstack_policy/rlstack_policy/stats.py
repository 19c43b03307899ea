"""Loop statistics for the policy node's diagnostics (no rclpy): achieved rate, jitter,
observation-to-action latency, compute time and overruns over a sliding window."""

from __future__ import annotations

from collections import deque
from typing import Dict, Optional, Sequence

import numpy as np


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
