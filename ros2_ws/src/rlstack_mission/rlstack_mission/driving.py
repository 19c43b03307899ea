"""How the fetch mission moves the base (a part of :class:`rlstack_mission.fetch.FetchMission`, pure
Python): one navigation goal (lost localisation ends the mission), a leg tried again (a gap in the
odometry waited out), whether navigation's sensors see a pose blocked, and where to stand to grasp
a match (:mod:`rlstack_mission.approaches` on the map the robot has; UNREACHABLE when nowhere).
"""

from __future__ import annotations

import math
from typing import Callable, List, Optional

from .approaches import (
    SENSED_TARGET_CLEAR,
    Approach,
    _occupied,
    clearance,
    grow_sensed_obstacles,
    plan_approaches,
    plan_floor_approaches,
)
from .bookkeeping import Bookkeeping
from .mission_types import STALE_ODOMETRY, STALE_ODOMETRY_PAUSE_S, FetchCode, Match, MissionAborted, NavOutcome, Pose2D


class Driving(Bookkeeping):
    """Navigation goals, legs and the approaches to a match, for the phases that drive."""

    def _sensed_blocked(self, pose: Pose2D) -> bool:
        """True when navigation's sensed obstacles lie within the robot's radius of ``pose``
        (False when they are unknown)."""
        sensed = self.ports.sensed_obstacles()
        static, res, origin = self.ports.occupancy()
        if sensed is None or sensed.shape != static.shape:
            return False
        return not clearance(sensed.astype(bool), res, origin, pose.x, pose.y, self.robot_radius)

    def _approaches(self, target: Match, around_sensed: bool = False) -> List[Approach]:
        """Where to stand to grasp ``target``, planned on the static map; ``around_sensed``: on the
        static map plus the obstacles navigation's sensors mark (grown by ``sensed_obstacle_margin``),
        [] when none are known or no pose is free."""
        static, res, origin = self.ports.occupancy()
        on_floor = not _occupied(static, res, origin, target.x, target.y)
        mask = static
        if around_sensed:
            sensed = self.ports.sensed_obstacles()
            if sensed is None or sensed.shape != static.shape:
                return []
            mask = static | grow_sensed_obstacles(sensed, res, origin, self.p.sensed_obstacle_margin,
                                                  (target.x, target.y), SENSED_TARGET_CLEAR)
        if on_floor and self.p.floor_grasps:
            base = self.ports.base_pose()
            approaches = plan_floor_approaches(mask, res, origin, target.x, target.y, self.p, self.robot_radius,
                                               near=(base.x, base.y))
        elif on_floor:
            approaches = []
        else:
            base = self.ports.base_pose()
            approaches = plan_approaches(mask, res, origin, target.x, target.y, self.p, self.robot_radius,
                                         near=(base.x, base.y))
        if not approaches and around_sensed:
            return []
        if not approaches:
            why = ("it lies on the floor, and this lift controller grasps from tables only (floor_grasps: false)"
                   if on_floor and not self.p.floor_grasps else
                   "it lies on the floor with no free place to stand in front of it" if on_floor else
                   "no side of its support is free for the robot within reach of the arm")
            raise MissionAborted(FetchCode.UNREACHABLE,
                                 f"cannot stand to grasp '{target.label}' at ({target.x:.2f}, {target.y:.2f}): {why}")
        return approaches

    def _navigate(self, pose: Pose2D, until: Optional[Callable[[], bool]] = None,
                  any_heading: bool = False) -> NavOutcome:
        """One navigation goal (``until``: :meth:`RobotPorts.navigate`; ``any_heading``: no turn to
        ``pose.yaw`` at the end). Lost localisation ends the mission: every pose after it would be
        driven to on a wrong idea of where the robot is."""
        kwargs = {"yaw_tolerance": math.pi} if any_heading else {}
        outcome = self.ports.navigate(pose, until, **kwargs) if until is not None else \
            self.ports.navigate(pose, **kwargs)
        if outcome.localization_lost:
            raise MissionAborted(FetchCode.LOCALIZATION_LOST,
                                 f"navigation stopped: localisation lost ({outcome.reason})")
        return outcome

    def _drive_to(self, pose: Pose2D, what: str) -> NavOutcome:
        outcome = NavOutcome(False, "not tried")
        for attempt in range(max(1, self.p.max_nav_attempts)):
            outcome = self._navigate(pose)
            if outcome.ok or outcome.dropped:
                return outcome
            self.ports.feedback(self._phase or "NAVIGATE", f"{what}: attempt {attempt + 1} failed ({outcome.reason})")
            if outcome.reason.startswith(STALE_ODOMETRY):
                # A gap in the odometry (a busy computer, a driver restart) is usually over within a
                # second; trying again at once would be refused for the same gap.
                self.ports.wait(STALE_ODOMETRY_PAUSE_S)
        return outcome
