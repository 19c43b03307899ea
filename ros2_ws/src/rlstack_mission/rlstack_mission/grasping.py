"""NAVIGATE and GRASP (a part of :class:`rlstack_mission.fetch.FetchMission`, pure Python): drive to
a staging pose beside the match, look at it again from there (a near miss confirmed, the position
refined), dock (an object on the floor: its grasp pose estimated first, squared up to a turned cube),
run the lift and stow the arm; after a failed lift recover the arm, back off, look again and retry.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence

from rlstack_bundle.frames import wrap_quarter

from .approaches import Approach, square_floor_approach
from .checks import _set_aside_code, best_match
from .driving import Driving
from .mission_types import (
    NO_GRASP_POSE,
    FetchCode,
    FetchResult,
    GraspOutcome,
    Match,
    MissionAborted,
    Pose2D,
    _WrongObject,
)

#: a detour (:meth:`Grasping._detour_towards`) goes to a waypoint at least this far from the robot, m
DETOUR_MIN_M = 1.0


class Grasping(Driving):
    """Getting the chosen match into the hand: :meth:`_navigate_and_grasp`."""

    def _navigate_and_grasp(self, query: str, target: Match, result: FetchResult) -> Match:
        failures: List[str] = []
        for attempt in range(1, self.p.max_grasp_attempts + 1):
            self._enter("NAVIGATE", f"to '{target.label}' at ({target.x:.2f}, {target.y:.2f}), grasp attempt {attempt}")
            nav_reasons: List[str] = []
            reached = self._reach_staging(target, nav_reasons)
            if reached is None and self._detour_towards(target):
                reached = self._reach_staging(target, nav_reasons)
            if reached is None:
                raise MissionAborted(FetchCode.UNREACHABLE,
                                     f"could not reach any side of '{target.label}': " + "; ".join(nav_reasons))
            # re-observe from the staging pose: the map's estimate is best from close by
            with self._step("close_look"):
                # the arm out of the camera's view for the close look: the map sees the whole table top,
                # and the grasp pose is estimated from this arm pose after docking (the move is made now,
                # while the map settles, not after docking)
                stopped = self.clock()
                self.ports.clear_view()
                # the settle counts from when the base stopped: the map took in frames during the arm move
                self.ports.wait(max(0.0, self.p.settle_s - (self.clock() - stopped)))
                answer = self._query(query)
                # a look-alike: the close look's shape check decides
                if not target.confirmed and not target.look_alike:
                    target = self._confirm(answer, target)
                refined = best_match(answer, self.p.min_match_score, near=(target.x, target.y),
                                     max_shift=self.p.reobserve_max_shift)
                if refined is not None:
                    target = refined
            if reached.on_floor:
                # the camera sees the floor only from ~0.72 m ahead: estimate here, then drive in
                with self._step("close_look"):
                    estimated = self._estimate_on_floor(target, failures, attempt)
                if estimated is None:
                    continue
                base = self.ports.base_pose()
                ox, oy = estimated.xy if estimated.xy is not None else (target.x, target.y)
                dock = min(max(0.0, base.distance_to(ox, oy) - self.p.floor_grasp_distance),
                           self.p.floor_view_distance)
            else:
                dock = min(max(0.0, reached.dock_distance(self.ports.base_pose(), self.p.grasp_clearance)),
                           self.p.staging_clearance)
            with self._step("dock"):
                docked = self.ports.drive_straight(dock)
            if not docked.ok:
                failures.append(f"docking: {docked.reason}")
                with self._step("back_off"):
                    self.ports.drive_straight(-dock)
                continue
            self._enter("GRASP", f"lifting '{target.label}' (attempt {attempt}/{self.p.max_grasp_attempts})")
            result.grasp_attempts = attempt
            with self._step("lift"):
                grasp = self.ports.grasp(target, estimate=not reached.on_floor)
            if grasp.ok:
                self._enter("RETURN", "stowing the arm in its carry pose")
                with self._step("stow"):   # backing off from the table meanwhile
                    stowed = self.ports.stow(back_off=dock)
                if not stowed.ok:
                    raise MissionAborted(FetchCode.GRASP_FAILED,
                                         f"lost '{target.label}' while stowing: {stowed.reason}")
                return target
            if grasp.wrong_object:
                with self._step("retry"):
                    self.ports.recover_arm()
                    self.ports.drive_straight(-dock)
                raise _WrongObject(f"'{target.label}' at ({target.x:.2f}, {target.y:.2f}): {grasp.reason}",
                                   _set_aside_code(grasp))
            failures.append(grasp.reason)
            self.ports.feedback("GRASP", f"attempt {attempt} failed: {grasp.reason}; backing off to look again")
            with self._step("retry"):
                self.ports.recover_arm()
                self.ports.drive_straight(-dock)
                self.ports.wait(self.p.settle_s)
                again = best_match(self._query(query), self.p.min_match_score, near=(target.x, target.y),
                                   max_shift=self.p.reobserve_max_shift)
            if again is not None:
                target = again
        why = f"could not lift '{target.label}' in {self.p.max_grasp_attempts} attempt(s): " + "; ".join(failures)
        if failures and all(f.startswith(NO_GRASP_POSE) for f in failures):
            # Every close look refused (TARGET_NOT_VISIBLE, POSE_UNCERTAIN, ...): nothing graspable was
            # seen where the map put it. With depth noise the map makes such matches (a blob on a table
            # edge named "yellow cube", a floor ball read as a cube and too small to estimate from 1 m),
            # so the match is set aside and the search goes on; GRASP_FAILED if nothing else matches.
            raise _WrongObject(f"'{target.label}' at ({target.x:.2f}, {target.y:.2f}): no object to grasp seen "
                               f"there from close by ({why})", FetchCode.GRASP_FAILED)
        raise MissionAborted(FetchCode.GRASP_FAILED, why)

    def _reach_staging(self, target: Match, nav_reasons: List[str]) -> Optional[Approach]:
        """Drive to a staging pose of ``target``: those planned on the static map, then, every one of them
        failed (an object on the floor beside the table), those planned around what the sensors mark.
        The approach reached, or None (each failure's reason appended to ``nav_reasons``)."""
        tried: List[Pose2D] = []
        for around_sensed in (False, True):
            fresh = [c for a in self._approaches(target, around_sensed) for c in (a, *a.alternates)
                     if all(math.hypot(c.staging.x - t.x, c.staging.y - t.y) >= 0.05 for t in tried)]
            if around_sensed and fresh:
                self.ports.feedback("NAVIGATE", f"every staging pose planned on the static map was blocked: "
                                                f"trying {len(fresh)} planned around the obstacles the sensors see")
            for candidate in fresh:
                tried.append(candidate.staging)
                with self._step("approach"):
                    outcome = self._drive_to(candidate.staging, "staging pose")
                if outcome.ok:
                    return candidate
                nav_reasons.append(outcome.reason)
        return None

    def _detour_towards(self, target: Match) -> bool:
        """No staging pose of ``target`` was reached from here: drive to the exploration waypoint nearest
        the target that is at least ``DETOUR_MIN_M`` away, so that the staging poses are tried again from
        there. From here the sensed obstacles may close every way to the target (seen once: objects on
        the floor between the robot and a table's only free side) while another way is open; the
        detour also shows navigation's sensors the target's surroundings from elsewhere. Returns whether
        there was a waypoint to go to (the drive there may stop short: the poses are tried from wherever
        the robot ends)."""
        here = self.ports.base_pose()
        away = [w for w in self.p.explore_waypoints if here.distance_to(w[0], w[1]) >= DETOUR_MIN_M]
        if not away:
            return False
        x, y, yaw = min(away, key=lambda w: math.hypot(w[0] - target.x, w[1] - target.y))
        self.ports.feedback("NAVIGATE", f"no side of '{target.label}' reached from here: going round by the waypoint "
                                        f"({x:.1f}, {y:.1f}) to try again from there")
        with self._step("approach"):
            self._navigate(Pose2D(x, y, yaw), any_heading=True)
        return True

    def _estimate_on_floor(self, target: Match, failures: List[str], attempt: int) -> Optional[GraspOutcome]:
        """Estimate the grasp pose of an object on the floor from where the robot stands; a cube
        turned more than ``floor_square_up_deg`` from the approach is looked at again from a free
        pose square to one of its faces first. None (reason in ``failures``) when no estimate."""
        estimated = self.ports.estimate_target(target, from_afar=True)
        for squared in (False, True):
            if estimated.wrong_object:
                raise _WrongObject(f"'{target.label}' at ({target.x:.2f}, {target.y:.2f}): {estimated.reason}",
                                   _set_aside_code(estimated))
            if not estimated.ok:
                failures.append(estimated.reason)
                self.ports.feedback("NAVIGATE", f"attempt {attempt}: {estimated.reason}; looking again")
                return None
            if squared or estimated.yaw is None:
                return estimated
            base = self.ports.base_pose()
            turned = wrap_quarter(estimated.yaw - base.yaw)
            if abs(turned) <= math.radians(self.p.floor_square_up_deg):
                return estimated
            mask, res, origin = self.ports.occupancy()
            ox, oy = estimated.xy if estimated.xy is not None else (target.x, target.y)
            square = square_floor_approach(mask, res, origin, ox, oy, estimated.yaw, self.p, self.robot_radius,
                                           near=(base.x, base.y))
            if square is None:
                return estimated        # no free pose square to a face: grasp it as it lies
            self.ports.feedback("NAVIGATE", f"'{target.label}' is turned {math.degrees(turned):.0f} deg to the "
                                            "approach: going round to face it square")
            with self._step("square_up"):
                squared_up = self._drive_to(square.staging, "square-on pose").ok
            if not squared_up:
                return estimated        # could not get there: grasp it from here
            estimated = self.ports.estimate_target(target, from_afar=True)
        return estimated

    def _confirm(self, answer: Sequence[Match], target: Match) -> Match:
        """A near miss seen again from its staging pose (``answer``: the map's answer there): the
        map's match at it if it now reaches ``min_match_score``; else the match is set aside
        (:class:`_WrongObject`, NOT_FOUND)."""
        best = best_match(answer, -math.inf, near=(target.x, target.y), max_shift=self.p.reobserve_max_shift)
        if best is not None and best.score >= self.p.min_match_score:
            self.ports.feedback(self._phase or "NAVIGATE",
                                f"'{best.label}' scored {best.score:.2f} from close by: fetching it")
            return best
        score = f"{best.score:.2f}" if best is not None else "nothing"
        raise _WrongObject(f"'{target.label}' at ({target.x:.2f}, {target.y:.2f}) scored {target.score:.2f} "
                           f"from afar and {score} from close by, under {self.p.min_match_score:g}")
