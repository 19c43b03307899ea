"""The fetch mission, pure Python (no rclpy): find an object named in words, bring it to a drop-off point.

The mission in phases; :data:`STAGES` lists them in this order and :meth:`FetchMission.run`
runs them::

    LOCATE    ask the semantic map for the text; a match needs ``min_match_score``
    EXPLORE   nothing matched: visit the exploration waypoints, looking around at each and
              asking again, then look at each table (support) of the static map from its side,
              until found or ``explore_timeout_s``                              -> NOT_FOUND
              (a match the robot cannot stand next to is set aside and exploring goes on;
              UNREACHABLE if nothing else turns up)
    NAVIGATE  choose the free side of the object's support (table) nearest to it, drive to a
              staging pose there (the navigation stack plans, replans on a blocked path),
              look again to refine the object's position, dock straight in   -> UNREACHABLE
              (an object on the floor: a free pose ``floor_view_distance`` from it, facing it,
              where the head camera sees it; the grasp pose is estimated there, then the base
              drives in to ``floor_grasp_distance``: from that close the camera cannot see it)
    GRASP     run the lift controller; on failure release, back off, re-observe and retry,
              up to ``max_grasp_attempts``                                   -> GRASP_FAILED
    RETURN    stow the arm in its carry pose while backing off, drive to the stand pose behind the
              drop-off point (blocked all round: look at it, then have navigation forget its
              sensed obstacles, and try again)                               -> UNREACHABLE
              (the hand feels the object fall out on the way, or arrives empty: the base stops,
              looks from 1 m away at where it most likely fell, and fetches it from the floor,
              up to ``max_drop_recoveries`` times                             -> GRASP_FAILED)
    DROP      put the object down at the drop-off point (the hand lowers it to the floor), open
              the gripper; the fingers must be seen open and the hand empty (re-tried by the
              robot)                                             -> RELEASE_FAILED / SUCCEEDED

Everything that touches the robot goes through :class:`RobotPorts` (the ROS node implements it
with the semantic-map service, the NavigateTo action, the policy node's lifecycle and a few
topics); the decisions and the geometry live in this package and are unit-tested without ROS.
Failures end the mission with a code of ``rlstack_interfaces/action/Fetch`` and a reason a
person can act on.

Each concern of the mission is a module of its own (this module re-exports their public names)::

    mission_types  result codes, the exceptions that end a fetch, the values passed to and from
                   the robot, the parameters (FetchParams), what the robot offers (RobotPorts)
    approaches     where to stand: beside an object's support, around an object on the floor,
                   behind the drop-off
    viewpoints     where to look from while exploring: the waypoint tour, poses beside a waypoint,
                   the supports' sides
    checks         what the camera sees and the hand holds: the match to take, the close look's
                   shape and size against the label, the hand's opening
    bookkeeping    the phase and step clocks (STEPS)
    driving        navigation goals, legs tried again, where to stand for a match
    explore        LOCATE and EXPLORE
    grasping       NAVIGATE and GRASP, a failed lift's retry included
    recovery       an object dropped on the way fetched again from the floor
    fetch          the stages, and FetchMission: the parts put together, and what follows when a
                   match is set aside
"""

from __future__ import annotations

import math
import time
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

from rlstack_bundle.frames import wrap_quarter

from .approaches import (
    FLOOR_APPROACHES_AFTER,
    SENSED_TARGET_CLEAR,
    Approach,
    clearance,
    drop_stand_poses,
    grow_sensed_obstacles,
    plan_approaches,
    plan_floor_approaches,
    square_floor_approach,
    stand_pose_for_drop,
)
from .bookkeeping import STEPS
from .checks import (
    EQUAL_SIDED_SHAPES,
    FLAT_SHAPES,
    ROUND_SHAPES,
    SQUARE_SHAPES,
    best_match,
    expected_shape_words,
    footprint_mismatch,
    height_mismatch,
    look_alike_query,
    named_round_for_square,
    too_wide,
)
from .explore import Exploring
from .mission_types import (
    NO_GRASP_POSE,
    SENSED_BLOCKED,
    STALE_ODOMETRY,
    STALE_ODOMETRY_PAUSE_S,
    FetchCode,
    FetchParams,
    FetchResult,
    GraspOutcome,
    Match,
    MissionAborted,
    NavOutcome,
    Pose2D,
    RobotPorts,
    _Dropped,
    _WrongObject,
)
from .recovery import Recovery
from .viewpoints import SupportView, alternate_viewpoints, support_views, tour, tour_order

__all__ = [
    # the mission (this module)
    "PHASES", "STAGES", "Stage", "FetchMission",
    # mission_types
    "FetchCode", "MissionAborted", "Match", "Pose2D", "NavOutcome", "GraspOutcome", "FetchParams", "FetchResult",
    "RobotPorts", "STALE_ODOMETRY", "STALE_ODOMETRY_PAUSE_S", "SENSED_BLOCKED", "NO_GRASP_POSE",
    # bookkeeping
    "STEPS",
    # approaches
    "Approach", "clearance", "grow_sensed_obstacles", "plan_approaches", "plan_floor_approaches",
    "square_floor_approach", "stand_pose_for_drop", "SENSED_TARGET_CLEAR", "FLOOR_APPROACHES_AFTER",
    # viewpoints
    "SupportView", "alternate_viewpoints", "support_views", "tour", "tour_order",
    # checks
    "best_match", "expected_shape_words", "look_alike_query", "named_round_for_square", "footprint_mismatch",
    "height_mismatch", "too_wide",
    "ROUND_SHAPES", "SQUARE_SHAPES", "EQUAL_SIDED_SHAPES", "FLAT_SHAPES",
    # the frame helper the ROS ports take from here
    "wrap_quarter",
]


class Stage(NamedTuple):
    """A stretch of the mission that :meth:`FetchMission.run` runs with one call."""

    phases: Tuple[str, ...]       # the phases it goes through, in order (the module docstring tells each)
    method: str                   # the FetchMission method that runs it: (query, dropoff, result) -> None
    ends: Tuple[FetchCode, ...]   # the codes it may end the mission with (CANCELED and ERROR: any stage)


#: The mission's stages, in order; the next one runs when one returns, and a code ends the mission.
STAGES: Tuple[Stage, ...] = (
    # find a match (exploring while the map names none), drive to it, lift it and stow it; a match that
    # the close look shows to be another object, or one the robot cannot stand next to, is set aside
    # and the search goes on (:meth:`FetchMission._fetch_the_right_object`)
    Stage(("LOCATE", "EXPLORE", "NAVIGATE", "GRASP"), "_pick_up",
          (FetchCode.NOT_FOUND, FetchCode.UNREACHABLE, FetchCode.GRASP_FAILED, FetchCode.LOCALIZATION_LOST)),
    # carry it to the stand pose behind the drop-off; an object that fell out on the way is fetched again
    Stage(("RETURN",), "_bring_back", (FetchCode.UNREACHABLE, FetchCode.GRASP_FAILED, FetchCode.LOCALIZATION_LOST)),
    # put it down and let go
    Stage(("DROP",), "_put_down", (FetchCode.RELEASE_FAILED, FetchCode.SUCCEEDED)),
)
#: every phase, in the order of the mission
PHASES: Tuple[str, ...] = tuple(phase for stage in STAGES for phase in stage.phases)


class FetchMission(Exploring, Recovery):
    """One fetch: ``FetchMission(ports, params, robot_radius).run(query, dropoff)``.

    Its parts, one concern each: :class:`~rlstack_mission.bookkeeping.Bookkeeping` (the clocks),
    :class:`~rlstack_mission.driving.Driving`, :class:`~rlstack_mission.explore.Exploring`,
    :class:`~rlstack_mission.grasping.Grasping` and :class:`~rlstack_mission.recovery.Recovery`."""

    def __init__(self, ports: RobotPorts, params: FetchParams, robot_radius: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ports, self.p, self.robot_radius, self.clock = ports, params, robot_radius, clock
        super().__init__()   # the clocks and the exploring state (Bookkeeping, Exploring)

    def run(self, query: str, dropoff: Pose2D) -> FetchResult:
        """The mission: each of :data:`STAGES` in turn, until a code ends it."""
        result = FetchResult(FetchCode.ERROR, "not started")
        try:
            if not query.strip():
                raise MissionAborted(FetchCode.ERROR, "empty query: say what to fetch, e.g. 'the yellow cube'")
            if not all(math.isfinite(v) for v in (dropoff.x, dropoff.y, dropoff.yaw)):
                raise MissionAborted(FetchCode.ERROR, "drop-off pose is not finite")
            for stage in STAGES:
                getattr(self, stage.method)(query, dropoff, result)
        except MissionAborted as exc:
            result.code, result.reason = exc.code, exc.reason
        self._close()
        result.phase_durations = dict(self.durations)
        result.step_durations = dict(self.step_durations)
        return result

    # -- the stages
    def _pick_up(self, query: str, dropoff: Pose2D, result: FetchResult) -> None:
        """LOCATE, EXPLORE, NAVIGATE, GRASP: ``result.target``, lifted and stowed."""
        target = self._fetch_the_right_object(query, result)
        result.target = target

    def _bring_back(self, query: str, dropoff: Pose2D, result: FetchResult) -> None:
        """RETURN: ``result.target`` carried to the stand pose behind ``dropoff``, still in the hand; an
        object that fell out on the way is fetched again (:meth:`_fetch_dropped`)."""
        target = result.target
        drops = 0
        while True:
            try:
                self._return(dropoff)
                if not self.ports.holding():   # fell out at the last moment, or the watch missed it
                    raise _Dropped(f"'{target.label}' is no longer in the hand at the drop-off",
                                   self.ports.base_pose())
                break
            except _Dropped as exc:
                drops += 1
                if drops > self.p.max_drop_recoveries:
                    raise MissionAborted(FetchCode.GRASP_FAILED, f"{exc.reason} ({drops} drop(s) on the way; "
                                                                 f"max_drop_recoveries {self.p.max_drop_recoveries})")
                with self._step("recover"):
                    target = self._fetch_dropped(query, target, exc, result)
                result.target = target

    def _return(self, dropoff: Pose2D) -> None:
        self._enter("RETURN", f"carrying to ({dropoff.x:.2f}, {dropoff.y:.2f})")
        with self._step("carry"):
            outcome = self._carry_to_drop_off(dropoff)
        if outcome.dropped:
            raise _Dropped(f"the carried object fell out of the hand on the way to the drop-off ({outcome.reason})",
                           self.ports.base_pose())
        if not outcome.ok:
            raise MissionAborted(FetchCode.UNREACHABLE, f"could not reach the drop-off: {outcome.reason}")

    def _carry_to_drop_off(self, dropoff: Pose2D) -> NavOutcome:
        """Drive to a stand pose at the drop-off (:meth:`_stand_or_look`). When none is reached and
        navigation's sensors mark obstacles, some may be marks made while the pose estimate was off
        (returns off walls and furniture then land where nothing stands, and stay until the camera
        sees through them): with ``drop_clear_obstacles``, navigation forgets them, the camera gets
        ``settle_s`` to mark what stands there now, and the stand poses are tried once more."""
        outcome = self._stand_or_look(dropoff)
        if outcome.ok or outcome.dropped or not self.p.drop_clear_obstacles:
            return outcome
        sensed = self.ports.sensed_obstacles()
        if sensed is not None and not sensed.any():
            return outcome            # nothing sensed to forget: the static map or the planner refused
        self.ports.feedback("RETURN", "drop-off: no stand pose reached; clearing navigation's sensed obstacles "
                                      "and trying again")
        self.ports.clear_sensed_obstacles()
        self.ports.wait(self.p.settle_s)
        again = self._stand_at_drop_off(dropoff)
        if again.ok or again.dropped:
            return again
        return NavOutcome(False, f"{outcome.reason}; with navigation's sensed obstacles cleared: {again.reason}")

    def _stand_or_look(self, dropoff: Pose2D) -> NavOutcome:
        """Drive to a stand pose at the drop-off (:meth:`_stand_at_drop_off`). When none is reached, the
        sensors may be marking what is no longer there (or never was: depth noise), and navigation
        refuses a goal among its marks from anywhere: drive to where the camera sees the drop-off's
        floor (``drop_look_distance`` behind a free stand pose, facing it), give the obstacle grid
        ``settle_s`` to clear what it now sees through, and try the stand poses once more."""
        outcome = self._stand_at_drop_off(dropoff)
        if outcome.ok or outcome.dropped or self.p.drop_look_distance <= 0.0:
            return outcome
        look = self._drop_off_view(dropoff)
        if look is None:
            return outcome
        self.ports.feedback("RETURN", f"drop-off: no stand pose reached; looking at it from ({look.x:.2f}, "
                                      f"{look.y:.2f}) so that the sensors see its floor again")
        seen = self._navigate(look)
        if seen.dropped:
            return seen
        if not seen.ok:
            return NavOutcome(False, f"{outcome.reason}; the place to look at it from, ({look.x:.2f}, {look.y:.2f}), "
                                     f"not reached either ({seen.reason})")
        self.ports.wait(self.p.settle_s)
        return self._stand_at_drop_off(dropoff)

    def _drop_off_view(self, dropoff: Pose2D) -> Optional[Pose2D]:
        """A free pose ``drop_look_distance`` behind one of the drop-off's stand poses, facing it (the
        asked heading's first); None when every one is blocked on the static map or by the sensors."""
        back = self.p.drop_look_distance
        for stand in drop_stand_poses(dropoff.x, dropoff.y, dropoff.yaw, self.p.carry_offset,
                                      self.p.dropoff_headings):
            look = Pose2D(stand.x - back * math.cos(stand.yaw), stand.y - back * math.sin(stand.yaw), stand.yaw)
            if self._free_to_stand(look):
                return look
        return None

    def _free_to_stand(self, pose: Pose2D) -> bool:
        """Neither the static map nor navigation's sensed obstacles within the robot's radius of ``pose``."""
        static, res, origin = self.ports.occupancy()
        return clearance(static, res, origin, pose.x, pose.y, self.robot_radius) and not self._sensed_blocked(pose)

    def _stand_at_drop_off(self, dropoff: Pose2D) -> NavOutcome:
        """Drive to the stand pose behind ``dropoff`` at its heading; when navigation does not reach it
        (something the sensors see stands there), to the stand poses at the other ``dropoff_headings``
        around the point, nearest the asked heading first: from any of them the object goes down on
        the point. A pose the static map or the sensors already show blocked is not driven to."""
        stands = drop_stand_poses(dropoff.x, dropoff.y, dropoff.yaw, self.p.carry_offset, self.p.dropoff_headings)
        first = outcome = self._drive_to(stands[0], "drop-off")
        tried = 0
        for stand in stands[1:]:
            if outcome.ok or outcome.dropped:
                return outcome
            if not self._free_to_stand(stand):
                continue
            tried += 1
            self.ports.feedback("RETURN", f"drop-off: standing at heading {math.degrees(stand.yaw):.0f} deg instead, "
                                          f"at ({stand.x:.2f}, {stand.y:.2f})")
            outcome = self._navigate(stand)
        if outcome.ok or outcome.dropped or len(stands) == 1:
            return outcome
        return NavOutcome(False, f"{first.reason}; of {len(stands) - 1} other heading(s) around the point, "
                                 f"{tried} free stand pose(s) tried, none reached")

    def _put_down(self, query: str, dropoff: Pose2D, result: FetchResult) -> None:
        """DROP: ``result.target`` put down, the hand empty."""
        target = result.target
        self._enter("DROP", "putting it down at the drop-off point")
        with self._step("put_down"):
            released = self.ports.release()
        if not released.ok:
            raise MissionAborted(FetchCode.RELEASE_FAILED,
                                 f"could not let go of '{target.label}' at the drop-off: {released.reason}")
        # no settle wait here: the release ends with the arm's move back to its carry pose, by
        # when the object put down 6 cm above the floor lies still
        # a look-alike's label is the map's name, not what the close look found it to be
        named = (f"'{target.label}' (the map's name; the close look took it for '{query}')" if target.look_alike
                 else f"'{target.label}'")
        result.code, result.reason = FetchCode.SUCCEEDED, f"brought {named} to the drop-off"

    # -- what follows when a match is set aside
    def _fetch_the_right_object(self, query: str, result: FetchResult) -> Match:
        """Choose a match, drive to it and lift it. A match that the close look shows to be another
        kind of object (a round top where a cube was asked for) is set aside and the search goes on."""
        wrong: List[Tuple[Match, str]] = []
        codes: List[FetchCode] = []   # why each was set aside: NOT_FOUND (another object), GRASP_FAILED (none seen)
        while True:
            try:
                target = self._choose_target(query, wrong)
            except MissionAborted as exc:
                if exc.code == FetchCode.NOT_FOUND and codes and all(c == FetchCode.GRASP_FAILED for c in codes):
                    raise MissionAborted(FetchCode.GRASP_FAILED, exc.reason) from None   # nothing else matched
                raise
            result.target = target
            try:
                return self._navigate_and_grasp(query, target, result)
            except _WrongObject as exc:
                if len(wrong) >= self.p.max_grasp_attempts:
                    raise MissionAborted(exc.code, f"{exc.reason}; the other matches were no better") from None
                wrong.append((target, exc.reason))
                codes.append(exc.code)
                self.ports.feedback(self._phase or "NAVIGATE", f"{exc.reason}; looking for another match")

    def _choose_target(self, query: str, wrong: Sequence[Tuple[Match, str]] = ()) -> Match:
        """The best match the robot can stand next to. A match it cannot reach (on the floor, no free
        side) may be a misdetection (a red cylinder standing on the floor, seen side-on, looks like
        a red cube), so exploring goes on for another match; UNREACHABLE only when nothing else
        turns up. Matches in ``wrong`` (seen from close by to be another object) are skipped."""
        unreachable: List[Tuple[Match, str]] = list(wrong)
        while True:
            try:
                target = self._locate(query, avoid=[m for m, _ in unreachable])
            except MissionAborted as exc:
                if exc.code != FetchCode.NOT_FOUND or not unreachable:
                    raise
                if len(unreachable) == len(wrong):   # every match was another kind of object
                    raise MissionAborted(FetchCode.NOT_FOUND, f"{wrong[0][1]}; nothing else matched '{query}' "
                                                              "after exploring") from None
                reachable_misses = [why for m, why in unreachable[len(wrong):] if m.confirmed]
                if not reachable_misses:   # only near misses, none of them reachable for a close look
                    raise
                raise MissionAborted(FetchCode.UNREACHABLE, f"{reachable_misses[0]}; nothing else matched "
                                                            f"'{query}' after exploring") from None
            try:
                self._approaches(target)
                return target
            except MissionAborted as exc:
                if exc.code != FetchCode.UNREACHABLE:
                    raise
                unreachable.append((target, exc.reason))
                self.ports.feedback(self._phase or "LOCATE", f"{exc.reason}; looking for another match")
