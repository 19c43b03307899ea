"""The fetch mission's vocabulary (pure Python, no rclpy): the result codes and the exceptions that
end a fetch, the values passed between the mission and the robot (:class:`Match`, :class:`Pose2D`,
:class:`NavOutcome`, :class:`GraspOutcome`, :class:`FetchResult`), the mission's parameters
(:class:`FetchParams`) and what it needs from the robot (:class:`RobotPorts`).

The mission itself is :mod:`rlstack_mission.fetch`, which re-exports every name here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Callable, Dict, List, Optional, Protocol, Sequence, Tuple

import numpy as np


class FetchCode(IntEnum):
    """Result codes, identical to ``rlstack_interfaces/action/Fetch``."""

    SUCCEEDED = 0
    NOT_FOUND = 1
    UNREACHABLE = 2
    GRASP_FAILED = 3
    CANCELED = 4
    ERROR = 5
    RELEASE_FAILED = 6
    LOCALIZATION_LOST = 7


class MissionAborted(Exception):
    """Ends the mission with ``code`` and ``reason``."""

    def __init__(self, code: FetchCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class _Dropped(Exception):
    """The carried object fell out of the hand on the way to the drop-off (or the hand reached it
    empty); ``where``: the base pose when it was felt."""

    def __init__(self, reason: str, where: "Pose2D") -> None:
        super().__init__(reason)
        self.reason, self.where = reason, where


class _WrongObject(MissionAborted):
    """The close look showed another kind of object than the match, or no object at all: try another
    match. ``code``: the mission's end when no other match turns up (NOT_FOUND: another kind of
    object; GRASP_FAILED: nothing graspable was seen there, each look refused)."""

    def __init__(self, reason: str, code: FetchCode = FetchCode.NOT_FOUND) -> None:
        super().__init__(code, reason)


@dataclass(frozen=True)
class Match:
    """One answer of the semantic map: an object, where it is (map frame) and how well it matched."""

    object_id: int
    label: str
    x: float
    y: float
    z: float
    score: float
    confirmed: bool = True   # False: a near miss (score under min_match_score) fetched only if a close look confirms it
    #: the look-alike wording this match answered instead of the user's (:func:`look_alike_query`): it
    #: is lifted only if the close look's shape check of the user's words passes; '' for the user's own
    look_alike: str = ""


@dataclass(frozen=True)
class Pose2D:
    x: float
    y: float
    yaw: float

    def distance_to(self, x: float, y: float) -> float:
        return math.hypot(self.x - x, self.y - y)


#: navigation's reason code for a goal stopped or refused on old odometry (rlstack_nav), and how long
#: the mission waits for the odometry to come back before it tries the same goal again (s)
STALE_ODOMETRY = "STALE_ODOMETRY"
STALE_ODOMETRY_PAUSE_S = 1.0
#: why a pose was not driven to: navigation's sensors mark obstacles within the robot's radius of it
SENSED_BLOCKED = "obstacles the sensors see lie within the robot's radius of it"


@dataclass(frozen=True)
class NavOutcome:
    ok: bool
    reason: str = ""
    #: navigation refused or paused the goal because the localiser reports the robot lost: no other
    #: pose is worth trying, the mission ends LOCALIZATION_LOST
    localization_lost: bool = False
    #: stopped on the way because the caller's ``until`` answered True (the object was seen): the
    #: base stands still where it was
    interrupted: bool = False
    #: the carried object left the hand during the drive (the fingers closed on nothing): the
    #: drive was stopped there
    dropped: bool = False


@dataclass(frozen=True)
class GraspOutcome:
    ok: bool
    reason: str = ""
    #: the close look showed another kind of object than the match's label (see :func:`footprint_mismatch`,
    #: :func:`height_mismatch`)
    wrong_object: bool = False
    #: ... or an object the hand cannot close on (:func:`too_wide`): set aside as well, but the mission
    #: ends GRASP_FAILED, not NOT_FOUND, when nothing else turns up (it may be the object asked for)
    ungraspable: bool = False
    #: an estimate's centre (x, y) and yaw (mod 90 deg; None for a round object) in the map frame
    xy: Optional[Tuple[float, float]] = None
    yaw: Optional[float] = None


@dataclass
class FetchParams:
    """Mission parameters (the node declares each of them; see launch/params/mission.yaml)."""

    min_match_score: float = 0.85           # a semantic-map match needs at least this score (cosine, -1..1)
    near_miss_score: float = 0.6            # after exploring every waypoint, the best match scoring at least this
                                            # (but under min_match_score) is looked at from its staging pose and
                                            # fetched only if the map's score there reaches min_match_score
                                            # (>= min_match_score: off)
    explore_waypoints: Sequence[Tuple[float, float, float]] = ()  # (x, y, yaw): places looked around from while
                                            # exploring, in the order that sees the supports soonest
                                            # (:func:`discovery_order`); the yaw is not driven to (the look turns)
    #: (word, look-alike) pairs: after exploring, a query naming ``word`` that nothing matched is asked
    #: again with ``look-alike`` in its place, and the match is looked at from close by, where the
    #: grasp pose's shape check of the user's words decides (a toy brick reads as a cube of its
    #: colour from afar; its height tells them apart; "cube=thing": any object of the asked colour,
    #: as the map's colours hold where its shape names do not). () : off
    look_alikes: Sequence[Tuple[str, str]] = (("lego", "cube"), ("duplo", "cube"), ("cube", "thing"))
    look_around_yaws: int = 4               # headings looked at on each waypoint (360 deg / n apart); 0: none
    waypoint_view_range: float = 1.5        # a waypoint sees a support whose nearest edge lies this close in line of
                                            # sight (m): orders the waypoints (:func:`discovery_order`)
    waypoint_alternates: int = 2            # a waypoint navigation cannot reach: free poses this many around it tried
    waypoint_alternate_distance: float = 0.8  # ... that far from it (m)
    support_looks: bool = True              # after the waypoints, look at the top of every free-standing support of
                                            # the static map (table, cabinet, crate) from close by
                                            # (:func:`support_views`)
    support_view_clearance: float = 0.62    # ... standing this far out from its side (m)
    support_min_area: float = 0.2           # ... a support's footprint is at least this (m^2; a pillar is less)
    support_max_area: float = 2.0           # ... and at most this (m^2)
    support_max_side: float = 2.5           # ... and no side longer than this (m; walls are longer)
    explore_timeout_s: float = 360.0        # give up exploring after this long (s)
    max_grasp_attempts: int = 3             # grasps tried before GRASP_FAILED
    staging_alternates: int = 2             # a staging pose navigation cannot reach: this many slanted ones of its
                                            # side tried
    staging_alternate_spacing: float = 0.3  # ... each at least this far from the others (m)
    max_nav_attempts: int = 2               # navigation tries per leg (the controller itself replans on a blocked path)
    staging_clearance: float = 0.62         # base centre -> support edge at the staging pose (m); the
                                            # navigation footprint (robot_radius) must fit
    grasp_clearance: float = 0.40           # base centre -> support edge (as mapped) when grasping (m), as the lift
                                            # policy was trained
    max_edge_distance: float = 0.34         # objects farther than this from every support edge are out of the arm's
                                            # reach (m)
    approach_headings: int = 72             # directions tried around the object when choosing the approach side
    approach_edge_margin: float = 0.08      # sides whose object-to-edge distance is within this of the nearest edge's
                                            # are equally good; of those, the staging pose nearest the robot first (m)
    reobserve_max_shift: float = 0.25       # a refined match farther than this from the first estimate is another
                                            # object (m)
    carry_offset: float = 0.40              # carried object ahead of base_link (m): the stand pose is this far behind
                                            # the drop-off
    dropoff_headings: int = 8               # headings around the drop-off point whose stand poses are tried when the
                                            # asked heading's is not reached (360 deg / n apart; 1: that one only)
    drop_look_distance: float = 1.0         # no stand pose at the drop-off reached: looked at from this far behind
                                            # one, and tried again (m; 0: not looked at; the camera sees the floor
                                            # from ~0.72 m ahead of base_link)
    drop_clear_obstacles: bool = True       # still none reached: navigation's sensed obstacles are cleared (marks
                                            # made while the pose estimate was off), and the stand poses tried again
    floor_grasps: bool = True               # grasp objects lying on the floor (the robot-mode lift is trained for it)
    floor_view_distance: float = 1.0        # base_link -> object on the floor where its grasp pose is estimated (m):
                                            # the head camera sees the floor from ~0.72 m ahead of base_link
    floor_grasp_distance: float = 0.57      # base_link -> object on the floor when grasping (m): the middle of
                                            # the lift's trained floor range (0.46-0.68 m)
    floor_square_up_deg: float = 20.0       # a cube on the floor turned more than this from the approach (mod 90 deg)
                                            # is approached again square to one of its faces, where a free pose allows
    sensed_obstacle_margin: float = 0.10    # every staging pose planned on the static map blocked: plan again around
                                            # what navigation's sensors mark, grown by this (m; noisy depth makes
                                            # sensed blobs larger than the object)
    settle_s: float = 1.0                   # wait after docking and before each look from a new place (s), for the
                                            # map to settle
    look_while_driving: bool = True         # while exploring, ask the map every look_period_s on the drives and turns
                                            # and go for the object as soon as it is named (False: only at waypoints)
    max_drop_recoveries: int = 1            # the carried object fell out on the way to the drop-off: fetch it again
                                            # from where it fell this many times (0: GRASP_FAILED at once)
    drop_search_radius: float = 1.5         # ... a match this far from where it most likely fell (carry_offset ahead
                                            # of the base when the fall was felt) is the fallen object (m); it is
                                            # looked for from floor_view_distance away
    drop_backoff: float = 0.5               # ... no free pose to look from there: the base backs up this far instead
                                            # (m; the object lies near the carry point, closer than the camera sees)


class RobotPorts(Protocol):
    """What the mission needs from the robot. Blocking calls; each may raise :class:`MissionAborted`
    (e.g. CANCELED) to end the mission at once."""

    def query(self, text: str) -> List[Match]: ...
    def map_status(self) -> str:
        """The semantic map's own summary with its last answer (objects held, camera frames used and
        skipped), for the reason of a NOT_FOUND; '' when unknown."""
    def navigate(self, pose: Pose2D, until: Optional[Callable[[], bool]] = None,
                 yaw_tolerance: float = 0.0) -> NavOutcome:
        """Drive to ``pose`` (the navigation stack plans and follows). ``until``: asked every
        ``look_period_s`` on the way; True stops the base where it is (``interrupted``).
        ``yaw_tolerance``: rad, 0 for navigation's default; pi or more takes any heading."""
    def sensed_obstacles(self) -> Optional[np.ndarray]:
        """Cells navigation's sensors mark occupied, on the grid of :meth:`occupancy` (None: unknown)."""
    def clear_sensed_obstacles(self) -> None:
        """Have navigation forget every obstacle its sensors marked (they are marked again as the
        camera sees them), as Nav2's clear-costmap recovery does."""
    def base_pose(self) -> Pose2D: ...
    def occupancy(self) -> Tuple[np.ndarray, float, Tuple[float, float]]:
        """(occupied mask [row, col], resolution, (origin x, origin y)) of the static map."""
    def drive_straight(self, distance: float) -> NavOutcome: ...
    def turn(self, angle: float, until: Optional[Callable[[], bool]] = None) -> NavOutcome:
        """Turn in place by ``angle`` (rad, + counter-clockwise); ``until`` as in :meth:`navigate`."""
    def estimate_target(self, target: Match, from_afar: bool = False) -> GraspOutcome:
        """Estimate the target's grasp pose now and hold it (robot mode; the ablation needs none):
        for an object on the floor, which the camera no longer sees once the base has driven in.
        ``from_afar``: the look is from ~1 m (a floor object), where the footprint is not trusted."""
    def grasp(self, target: Match, estimate: bool = True) -> GraspOutcome:
        """Run the lift; ``estimate``: estimate the grasp pose first (False: use the one held by
        :meth:`estimate_target`)."""
    def recover_arm(self) -> None: ...
    def clear_view(self) -> None:
        """Move the arm out of the head camera's view (in the carry pose it hides the floor ahead)."""
    def stow(self, back_off: float = 0.0) -> GraspOutcome:
        """Bring the lifted object to the carry pose, the base backing straight off ``back_off`` (m)
        meanwhile; ok while the fingers still close on it. From a
        successful stow until :meth:`release` or :meth:`recover_arm`, :meth:`navigate` watches the
        hand and ends a drive the moment the object falls out (``NavOutcome.dropped``)."""
    def holding(self) -> bool:
        """The fingers are closed on something (robot mode: felt through the finger joints)."""
    def release(self) -> GraspOutcome:
        """Put the object down and open the gripper; ok once the hand let go of it (fingers seen open,
        the object not rising with the hand)."""
    def wait(self, seconds: float) -> None: ...
    def feedback(self, phase: str, detail: str) -> None: ...


#: how a grasp outcome's reason starts when the grasp pose estimator refused (no estimate, no grasp tried)
NO_GRASP_POSE = "no grasp pose"


@dataclass
class FetchResult:
    code: FetchCode
    reason: str
    phase_durations: Dict[str, float] = field(default_factory=dict)
    step_durations: Dict[str, float] = field(default_factory=dict)   # seconds per :data:`STEPS` entry
    grasp_attempts: int = 0
    target: Optional[Match] = None
    distance_driven: float = 0.0
