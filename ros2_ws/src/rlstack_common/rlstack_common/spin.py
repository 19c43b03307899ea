"""Waiting with a bound: :class:`Deadline`, and spinning an executor until something holds.

One home for the loops every tool, test harness and env wrote its own copy of::

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline: raise TimeoutError(...)
        executor.spin_once(timeout_sec=0.05)

:func:`spin_until` and :func:`spin_for` take any object with ``spin_once(timeout_sec=...)`` (an
rclpy executor); nothing here imports rclpy. Wall-clock (monotonic) time, never ROS time: a
deadline must expire even when /clock stops.
"""

from __future__ import annotations

import time
from typing import Callable, Iterator, Optional, Type

__all__ = ["Deadline", "spin_until", "spin_for"]


class Deadline:
    """A point ``seconds`` from now on the monotonic clock.

    ``remaining()`` is never negative; ``expired()`` is true once it is zero. Iterating with
    :meth:`slices` yields the time to wait next (at most ``step``) until the deadline passes::

        for wait in Deadline(2.0).slices(0.05):
            if done(): break
            executor.spin_once(timeout_sec=wait)
    """

    __slots__ = ("seconds", "end", "_clock")

    def __init__(self, seconds: float, clock: Optional[Callable[[], float]] = None) -> None:
        self.seconds = float(seconds)
        self._clock = clock or time.monotonic
        self.end = self._clock() + self.seconds

    def remaining(self) -> float:
        """Seconds left, 0 once expired."""
        return max(0.0, self.end - self._clock())

    def expired(self) -> bool:
        return self._clock() >= self.end

    def slices(self, step: float) -> Iterator[float]:
        """``min(step, remaining)`` while time remains (each re-read from the clock)."""
        while (left := self.end - self._clock()) > 0:
            yield min(step, left)


def spin_until(executor, predicate: Callable[[], bool], timeout: float, what: str, *, step: float = 0.05,
               should_stop: Optional[Callable[[], bool]] = None, error: Type[Exception] = TimeoutError,
               stopped: Type[Exception] = InterruptedError) -> None:
    """Spin ``executor`` until ``predicate()`` is true (checked before each spin, so a predicate that
    already holds costs no spin).

    :param step: longest single ``spin_once`` (s)
    :param should_stop: polled before each spin; when true, raise ``stopped`` (a shutdown request)
    :raises error: ``"timed out after {timeout} s waiting for {what}"`` once ``timeout`` seconds passed
    """
    deadline = Deadline(timeout)
    while not predicate():
        if should_stop is not None and should_stop():
            raise stopped(f"stopped while waiting for {what}")
        remaining = deadline.remaining()
        if remaining <= 0:
            raise error(f"timed out after {timeout:g} s waiting for {what}")
        executor.spin_once(timeout_sec=min(step, remaining))


def spin_for(executor, seconds: float, step: float = 0.05) -> None:
    """Process callbacks for ``seconds`` (to observe that something does NOT happen, or to let
    traffic flow for a fixed time)."""
    for wait in Deadline(seconds).slices(step):
        executor.spin_once(timeout_sec=wait)
