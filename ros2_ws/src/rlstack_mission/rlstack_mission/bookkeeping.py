"""Where the time of a fetch goes (pure Python, no rclpy): the phase clock (each phase entered is
reported as feedback and timed: ``FetchResult.phase_durations``) and the step clock, finer and
nested (:data:`STEPS`: ``FetchResult.step_durations``). :class:`Bookkeeping` is the base of every
part of :class:`rlstack_mission.fetch.FetchMission`.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, List, Optional

from .mission_types import FetchParams, Match, RobotPorts

#: Where the time of a fetch goes, finer than the phases (``FetchResult.step_durations``; each second
#: of a fetch counts in one step only, the innermost running one):
#:   map_query     waiting on the semantic map's answers
#:   explore_drive driving to exploration waypoints (or beside them)
#:   look_around   turning in place at a waypoint to look
#:   support_look  driving to and looking at the supports (tables) after the waypoints
#:   approach      driving to the staging pose in front of the object
#:   close_look    from the staging pose: the settle, the re-observation, the floor estimate
#:   square_up     driving round to face a cube on the floor square
#:   dock          driving straight in to the grasp distance
#:   lift          the lift controller (estimate, wrist turn, lift, hold)
#:   stow          the arm to its carry pose with the object, backing off from the table meanwhile
#:   back_off      driving straight back out after a failed docking
#:   retry         after a failed lift: the arm recovered, the settle, the look again
#:   carry         driving to the stand pose behind the drop-off
#:   put_down      lowering, opening, checking the hand empty, the arm back
#:   recover       a dropped object: the arm recovered, the look for it
STEPS = ("map_query", "explore_drive", "look_around", "support_look", "approach", "close_look", "square_up", "dock",
         "lift", "stow", "back_off", "retry", "carry", "put_down", "recover")


class Bookkeeping:
    """The phase and step clocks of one fetch, and the map query timed as a step. ``ports``, ``p``
    (the parameters), ``robot_radius`` and ``clock`` are set by
    :class:`rlstack_mission.fetch.FetchMission`; every part of the mission reads them."""

    ports: RobotPorts
    p: FetchParams
    robot_radius: float
    clock: Callable[[], float]

    def __init__(self) -> None:
        self._phase: Optional[str] = None
        self._phase_t0 = 0.0
        self.durations: Dict[str, float] = {}
        self.step_durations: Dict[str, float] = {}
        self._steps: List[List] = []                  # the running steps, innermost last: [name, t0 of its last slice]

    def _enter(self, phase: str, detail: str = "") -> None:
        now = self.clock()
        if self._phase is not None:
            self.durations[self._phase] = self.durations.get(self._phase, 0.0) + now - self._phase_t0
        self._phase, self._phase_t0 = phase, now
        self.ports.feedback(phase, detail)

    def _close(self) -> None:
        self._enter("END") if self._phase else None
        self.durations.pop("END", None)

    @contextmanager
    def _step(self, name: str) -> Iterator[None]:
        """Count the time inside the block to step ``name`` (one of :data:`STEPS`); a step started
        inside another pauses it, so every second counts once. Measured on the monotonic clock,
        not ``self.clock`` (the mission's decisions read that one; measuring must not move it)."""
        now = time.monotonic()
        if self._steps:
            outer = self._steps[-1]
            self.step_durations[outer[0]] = self.step_durations.get(outer[0], 0.0) + now - outer[1]
        self._steps.append([name, now])
        try:
            yield
        finally:
            now = time.monotonic()
            _, t0 = self._steps.pop()
            self.step_durations[name] = self.step_durations.get(name, 0.0) + now - t0
            if self._steps:
                self._steps[-1][1] = now

    def _query(self, text: str) -> List["Match"]:
        with self._step("map_query"):
            return self.ports.query(text)
