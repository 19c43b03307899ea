"""The fetch mission, pure Python (no rclpy): find an object named in words, bring it to a drop-off point.

Read :meth:`FetchMission.run` top to bottom; it is the whole mission::

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
              drop-off point                                                 -> UNREACHABLE
              (the hand feels the object fall out on the way, or arrives empty: the base stops,
              looks from 1 m away at where it most likely fell, and fetches it from the floor,
              up to ``max_drop_recoveries`` times                             -> GRASP_FAILED)
    DROP      put the object down at the drop-off point (the hand lowers it to the floor), open
              the gripper; the fingers must be seen open and the hand empty (re-tried by the
              robot)                                             -> RELEASE_FAILED / SUCCEEDED

Everything that touches the robot goes through :class:`RobotPorts` (the ROS node implements it
with the semantic-map service, the NavigateTo action, the policy node's lifecycle and a few
topics); the decisions and the geometry live here and are unit-tested without ROS.
Failures end the mission with a code of ``rlstack_interfaces/action/Fetch`` and a reason a
person can act on.
"""

from __future__ import annotations

import itertools
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Callable, Dict, Iterator, List, Optional, Protocol, Sequence, Tuple

import numpy as np

from rlstack_bundle.frames import wrap_quarter

PHASES = ("LOCATE", "EXPLORE", "NAVIGATE", "GRASP", "RETURN", "DROP")

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
    #: the close look showed another kind of object than the match's label (see :func:`footprint_mismatch`, :func:`height_mismatch`)
    wrong_object: bool = False
    #: ... or an object the hand cannot close on (:func:`too_wide`): set aside as well, but the mission
    #: ends GRASP_FAILED, not NOT_FOUND, when nothing else turns up (it may be the object asked for)
    ungraspable: bool = False
    #: an estimate's centre (x, y) and yaw (mod 90 deg; None for a round object) in the map frame
    xy: Optional[Tuple[float, float]] = None
    yaw: Optional[float] = None


@dataclass(frozen=True)
class Approach:
    """Where to stand to grasp an object from its support."""

    staging: Pose2D          # free pose facing the object, ``staging_clearance`` from the support's edge
    edge_distance: float     # object centre -> support edge along the approach direction (m)
    edge_x: float            # where the approach line crosses the support's edge (map frame)
    edge_y: float
    out_x: float             # unit vector from the object out through that edge
    out_y: float
    #: the same side at a slant (free on the static map): tried when the staging pose cannot be
    #: reached (something the static map does not know stands there, an object on the floor)
    alternates: Tuple["Approach", ...] = ()
    #: an object on the floor: ``edge_*`` is the object itself (no support edge), the grasp pose is
    #: estimated at the staging pose and the base then drives in to ``floor_grasp_distance``
    on_floor: bool = False

    def dock_distance(self, base: Pose2D, grasp_clearance: float) -> float:
        """How far to drive straight ahead from ``base`` to stand ``grasp_clearance`` from the edge."""
        gx, gy = self.edge_x + grasp_clearance * self.out_x, self.edge_y + grasp_clearance * self.out_y
        # the base stands out along +out and faces the object: what lies between it and the grasp
        # stand-off, measured along +out, is the distance to drive ahead
        return (base.x - gx) * self.out_x + (base.y - gy) * self.out_y


@dataclass
class FetchParams:
    """Mission parameters (the node declares each of them; see launch/params/mission.yaml)."""

    min_match_score: float = 0.85           # a semantic-map match needs at least this score (cosine, -1..1)
    near_miss_score: float = 0.6            # after exploring every waypoint, the best match scoring at least this
                                            # (but under min_match_score) is looked at from its staging pose and
                                            # fetched only if the map's score there reaches min_match_score
                                            # (>= min_match_score: off)
    explore_waypoints: Sequence[Tuple[float, float, float]] = ()  # (x, y, yaw) visited while exploring, in the
                                            # order of the shortest tour from where exploring starts (:func:`tour`)
    #: (word, look-alike) pairs: after exploring, a query naming ``word`` that nothing matched is asked
    #: again with ``look-alike`` in its place, and the match is looked at from close by, where the
    #: grasp pose's shape check of the user's words decides (a toy brick reads as a cube of its
    #: colour from afar; its height tells them apart). () : off
    look_alikes: Sequence[Tuple[str, str]] = (("lego", "cube"), ("duplo", "cube"))
    look_around_yaws: int = 4               # headings looked at on each waypoint (360 deg / n apart); 0: none
    waypoint_alternates: int = 2            # a waypoint navigation cannot reach: free poses this many around it tried
    waypoint_alternate_distance: float = 0.8  # ... that far from it (m)
    support_looks: bool = True              # after the waypoints, look at the top of every free-standing support of
                                            # the static map (table, cabinet, crate) from close by (:func:`support_views`)
    support_view_clearance: float = 0.62    # ... standing this far out from its side (m)
    support_min_area: float = 0.2           # ... a support's footprint is at least this (m^2; a pillar is less)
    support_max_area: float = 2.0           # ... and at most this (m^2)
    support_max_side: float = 2.5           # ... and no side longer than this (m; walls are longer)
    explore_timeout_s: float = 360.0        # give up exploring after this long (s)
    max_grasp_attempts: int = 3             # grasps tried before GRASP_FAILED
    staging_alternates: int = 2             # a staging pose navigation cannot reach: this many slanted ones of its side tried
    staging_alternate_spacing: float = 0.3  # ... each at least this far from the others (m)
    max_nav_attempts: int = 2               # navigation tries per leg (the controller itself replans on a blocked path)
    staging_clearance: float = 0.62         # base centre -> support edge at the staging pose (m); the
                                            # navigation footprint (robot_radius) must fit
    grasp_clearance: float = 0.40           # base centre -> support edge (as mapped) when grasping (m), as the lift policy was trained
    max_edge_distance: float = 0.34         # objects farther than this from every support edge are out of the arm's reach (m)
    approach_headings: int = 72             # directions tried around the object when choosing the approach side
    reobserve_max_shift: float = 0.25       # a refined match farther than this from the first estimate is another object (m)
    carry_offset: float = 0.40              # carried object ahead of base_link (m): the stand pose is this far behind the drop-off
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
    settle_s: float = 1.0                   # wait after docking and before each look from a new place (s), for the map to settle
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
    def navigate(self, pose: Pose2D, until: Optional[Callable[[], bool]] = None) -> NavOutcome:
        """Drive to ``pose`` (the navigation stack plans and follows). ``until``: asked every
        ``look_period_s`` on the way; True stops the base where it is (``interrupted``)."""
    def sensed_obstacles(self) -> Optional[np.ndarray]:
        """Cells navigation's sensors mark occupied, on the grid of :meth:`occupancy` (None: unknown)."""
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


# ----------------------------------------------------------------------------- geometry
def best_match(matches: Sequence[Match], min_score: float, near: Optional[Tuple[float, float]] = None,
               max_shift: float = math.inf, avoid: Sequence[Match] = ()) -> Optional[Match]:
    """The best-scoring match at or above ``min_score`` (optionally within ``max_shift`` of ``near``),
    none within ``max_shift`` (or 0.25 m) of a match in ``avoid``."""
    ok = [m for m in matches if math.isfinite(m.score) and m.score >= min_score
          and all(math.isfinite(v) for v in (m.x, m.y, m.z))]
    if near is not None:
        ok = [m for m in ok if math.hypot(m.x - near[0], m.y - near[1]) <= max_shift]
    gate = max_shift if math.isfinite(max_shift) else 0.25
    ok = [m for m in ok if all(math.hypot(m.x - a.x, m.y - a.y) > gate for a in avoid)]
    return max(ok, key=lambda m: m.score) if ok else None


def tour_order(start: Tuple[float, float], points: Sequence[Tuple[float, float]], max_exact: int = 8) -> List[int]:
    """Indices of ``points`` in the order of the shortest path from ``start`` through all of them
    (straight lines): every order tried for up to ``max_exact`` points (8! = 40320); more: nearest
    first, then improved by reversing stretches of it while that shortens it (2-opt). Why: a fixed
    order drove from one end of the home to the other and back (the home's seven waypoints: 12.7 m
    in the listed order, 11.5 m in the shortest)."""
    pts = [(float(x), float(y)) for x, y in points]

    def length(order: Sequence[int]) -> float:
        total, (x, y) = 0.0, start
        for k in order:
            total += math.hypot(pts[k][0] - x, pts[k][1] - y)
            x, y = pts[k]
        return total

    if len(pts) <= max_exact:
        return list(min(itertools.permutations(range(len(pts))), key=length)) if pts else []
    order, left, (x, y) = [], list(range(len(pts))), start
    while left:
        k = min(left, key=lambda i: math.hypot(pts[i][0] - x, pts[i][1] - y))
        left.remove(k)
        order.append(k)
        x, y = pts[k]
    improved = True
    while improved:
        improved = False
        for a in range(len(order) - 1):
            for b in range(a + 2, len(order) + 1):
                candidate = order[:a] + order[a:b][::-1] + order[b:]
                if length(candidate) < length(order) - 1e-9:
                    order, improved = candidate, True
    return order


def tour(start: Tuple[float, float], waypoints: Sequence[Tuple[float, float, float]],
         max_exact: int = 8) -> List[Tuple[float, float, float]]:
    """``waypoints`` (x, y, yaw) in the order of :func:`tour_order`."""
    return [waypoints[k] for k in tour_order(start, [(w[0], w[1]) for w in waypoints], max_exact)]


def grow_sensed_obstacles(sensed: np.ndarray, resolution: float, origin: Tuple[float, float],
                          margin: float, keep_clear: Tuple[float, float], clear_radius: float) -> np.ndarray:
    """The sensed obstacle cells grown by ``margin`` (m), less those within ``clear_radius`` of
    ``keep_clear`` (the target itself, which the sensors mark too when it lies on the floor)."""
    r = int(math.ceil(max(0.0, margin) / resolution))
    grown = sensed.astype(bool).copy()
    if r > 0:
        padded = np.pad(sensed.astype(bool), r)
        h, w = sensed.shape
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                if dx * dx + dy * dy <= r * r:
                    grown |= padded[r + dy:r + dy + h, r + dx:r + dx + w]
    rows, cols = np.indices(sensed.shape)
    cx = origin[0] + (cols + 0.5) * resolution
    cy = origin[1] + (rows + 0.5) * resolution
    grown[np.hypot(cx - keep_clear[0], cy - keep_clear[1]) <= clear_radius] = False
    return grown


def _occupied(mask: np.ndarray, resolution: float, origin: Tuple[float, float], x: float, y: float) -> bool:
    col = int(math.floor((x - origin[0]) / resolution))
    row = int(math.floor((y - origin[1]) / resolution))
    if not (0 <= row < mask.shape[0] and 0 <= col < mask.shape[1]):
        return True  # outside the map counts as blocked
    return bool(mask[row, col])


def clearance(mask: np.ndarray, resolution: float, origin: Tuple[float, float], x: float, y: float,
              radius: float) -> bool:
    """True when no occupied cell lies within ``radius`` of (x, y)."""
    r = int(math.ceil(radius / resolution))
    col = int(math.floor((x - origin[0]) / resolution))
    row = int(math.floor((y - origin[1]) / resolution))
    r0, r1, c0, c1 = row - r, row + r + 1, col - r, col + r + 1
    if r0 < 0 or c0 < 0 or r1 > mask.shape[0] or c1 > mask.shape[1]:
        return False
    rows, cols = np.mgrid[r0:r1, c0:c1]
    cx = origin[0] + (cols + 0.5) * resolution
    cy = origin[1] + (rows + 0.5) * resolution
    near = (cx - x) ** 2 + (cy - y) ** 2 <= radius ** 2
    return not bool(np.any(mask[r0:r1, c0:c1] & near))


def _edge_distance(mask: np.ndarray, resolution: float, origin: Tuple[float, float], x: float, y: float,
                   c: float, s: float, limit: float) -> float:
    """Distance from (x, y) along (c, s) to the first free point (inf beyond ``limit``)."""
    step = 0.1 * resolution
    d = 0.0
    while d <= limit:
        if not _occupied(mask, resolution, origin, x + d * c, y + d * s):
            return d
        d += step
    return math.inf


def plan_approaches(mask: np.ndarray, resolution: float, origin: Tuple[float, float], x: float, y: float,
                    params: FetchParams, robot_radius: float) -> List[Approach]:
    """Ways to stand at the object's support, best (object nearest to the edge) first, one per side.

    For each of ``approach_headings`` directions, march from the object until the map is free:
    that is the support's edge on that side. Around the shortest march lies an arc of directions
    whose marches are nearly as short (the grid is coarse); its middle is perpendicular to the
    nearest edge, where the arm reaches the object most easily. An approach qualifies when the
    staging pose, ``staging_clearance`` out from the edge, is free for the robot's footprint.
    An object on free floor has no support: [] (the lift controller grasps from tables only).
    """
    if not _occupied(mask, resolution, origin, x, y):
        return []
    n = params.approach_headings
    thetas = [2.0 * math.pi * k / n for k in range(n)]
    dists = [_edge_distance(mask, resolution, origin, x, y, math.cos(t), math.sin(t), params.max_edge_distance)
             for t in thetas]
    tol = 1.5 * resolution
    used = [False] * n
    out: List[Approach] = []
    for k in sorted(range(n), key=lambda i: dists[i]):
        if used[k] or not math.isfinite(dists[k]):
            continue
        # grow the arc of near-minimal directions around k, then aim at its middle
        lo = hi = k
        while (lo - 1) % n != k and math.isfinite(dists[(lo - 1) % n]) and dists[(lo - 1) % n] <= dists[k] + tol:
            lo -= 1
        while (hi + 1) % n != lo % n and math.isfinite(dists[(hi + 1) % n]) and dists[(hi + 1) % n] <= dists[k] + tol:
            hi += 1
        mid = 0.5 * (lo + hi)
        # this side: the arc and 45 deg around it, less the directions an earlier side took
        side = [j for j in range(lo - n // 8, hi + n // 8 + 1) if not used[j % n]]
        for j in side:
            used[j % n] = True
        # aim at the arc's middle; where a wall or furniture leaves no room to stand there, the
        # next direction of the same side that does (a corner object is reached at a slant). Further
        # free directions of the side, ``staging_alternate_spacing`` apart, are its alternates.
        found: List[Approach] = []
        for i in [mid] + sorted((j for j in side if j != mid), key=lambda j: abs(j - mid)):
            if len(found) > params.staging_alternates:
                break
            theta = 2.0 * math.pi * i / n
            c, s = math.cos(theta), math.sin(theta)
            d = _edge_distance(mask, resolution, origin, x, y, c, s, params.max_edge_distance)
            if not math.isfinite(d):
                continue
            sx, sy = x + (d + params.staging_clearance) * c, y + (d + params.staging_clearance) * s
            if clearance(mask, resolution, origin, sx, sy, robot_radius) and \
                    all(math.hypot(sx - a.staging.x, sy - a.staging.y) >= params.staging_alternate_spacing
                        for a in out + [b for a in out for b in a.alternates] + found):
                found.append(Approach(Pose2D(sx, sy, math.atan2(-s, -c)), d, x + d * c, y + d * s, c, s))
        if found:
            out.append(replace(found[0], alternates=tuple(found[1:])))
    out.sort(key=lambda a: a.edge_distance)
    return out


def plan_floor_approaches(mask: np.ndarray, resolution: float, origin: Tuple[float, float], x: float, y: float,
                          params: FetchParams, robot_radius: float, near: Optional[Tuple[float, float]] = None
                          ) -> List[Approach]:
    """Ways to stand to grasp an object lying on the floor at (x, y): poses ``floor_view_distance``
    from it facing it, free for the robot's footprint on the static map, with the grasp stand
    ``floor_grasp_distance`` from it free as well (the base drives straight in between). One per
    ``approach_headings`` direction, those nearest to ``near`` (the robot) first, kept
    ``staging_alternate_spacing`` apart; the first carries the next ``staging_alternates`` as its
    alternates, and at most ``FLOOR_APPROACHES_AFTER`` more follow (each costs up to
    ``max_nav_attempts`` navigation tries when something the map does not know blocks it). [] when
    none is free (the object lies against a wall or under furniture).
    """
    n = params.approach_headings
    free = [a for a in (_floor_approach(mask, resolution, origin, x, y, 2.0 * math.pi * k / n, params, robot_radius)
                        for k in range(n)) if a is not None]
    if near is not None:
        free.sort(key=lambda a: math.hypot(a.staging.x - near[0], a.staging.y - near[1]))
    picked: List[Approach] = []
    for a in free:
        if all(math.hypot(a.staging.x - b.staging.x, a.staging.y - b.staging.y) >= params.staging_alternate_spacing
               for b in picked):
            picked.append(a)
    if not picked:
        return []
    k = max(0, params.staging_alternates)
    return [replace(picked[0], alternates=tuple(picked[1:1 + k]))] + picked[1 + k:1 + k + FLOOR_APPROACHES_AFTER]


#: sensed obstacle cells this close to the target (m) are the target itself (on the floor), not in the way
SENSED_TARGET_CLEAR = 0.10

#: floor approaches kept after the first and its alternates (see :func:`plan_floor_approaches`)
FLOOR_APPROACHES_AFTER = 3


def _floor_approach(mask: np.ndarray, resolution: float, origin: Tuple[float, float], x: float, y: float,
                    out: float, params: FetchParams, robot_radius: float) -> Optional[Approach]:
    """The approach to an object on the floor at (x, y) from direction ``out`` (object -> robot, rad):
    the viewing pose ``floor_view_distance`` out, facing it, when both it and the grasp stand
    ``floor_grasp_distance`` out are free for the robot's footprint (the base drives straight in
    between); else None."""
    c, s = math.cos(out), math.sin(out)
    sx, sy = x + params.floor_view_distance * c, y + params.floor_view_distance * s
    gx, gy = x + params.floor_grasp_distance * c, y + params.floor_grasp_distance * s
    if not (clearance(mask, resolution, origin, sx, sy, robot_radius) and
            clearance(mask, resolution, origin, gx, gy, robot_radius)):
        return None
    return Approach(Pose2D(sx, sy, math.atan2(-s, -c)), 0.0, x, y, c, s, on_floor=True)


def square_floor_approach(mask: np.ndarray, resolution: float, origin: Tuple[float, float], x: float, y: float,
                          yaw: float, params: FetchParams, robot_radius: float,
                          near: Optional[Tuple[float, float]] = None) -> Optional[Approach]:
    """A floor approach facing one of the four faces of a cube at (x, y) turned ``yaw`` (map frame):
    the free one nearest to ``near``, or None. Why: while the gripper kept a fixed yaw, a cube turned
    near 45 deg to the approach was grasped across its corners (7.1 cm between the fingers), where
    the lift failed over ROS (a floor fetch: "not lifted within 14 s" twice, from a 45 deg approach).
    The wrist turn (``align_wrist``) now squares the fingers too; the floor runs were measured with
    both."""
    # facing a face: the robot looks along yaw + k * 90 deg, so it stands out along the opposite
    faces = [a for a in (_floor_approach(mask, resolution, origin, x, y, yaw + math.pi + k * math.pi / 2.0, params,
                                         robot_radius) for k in range(4)) if a is not None]
    if not faces:
        return None
    if near is None:
        return faces[0]
    return min(faces, key=lambda a: math.hypot(a.staging.x - near[0], a.staging.y - near[1]))


def alternate_viewpoints(mask: np.ndarray, resolution: float, origin: Tuple[float, float], goal: Pose2D,
                         near: Pose2D, distance: float, robot_radius: float, count: int) -> List[Pose2D]:
    """Up to ``count`` poses ``distance`` from ``goal`` (same heading), free for the robot's footprint on
    the static map, nearest to ``near`` (the robot) first.

    An exploration waypoint is a place to look from, not a place that matters: when something
    the static map does not know (an object on the floor, a person) blocks it, a pose beside it
    sees nearly the same.
    """
    ring = [Pose2D(goal.x + distance * math.cos(a), goal.y + distance * math.sin(a), goal.yaw)
            for a in (2.0 * math.pi * k / 12 for k in range(12))]
    free = [p for p in ring if clearance(mask, resolution, origin, p.x, p.y, robot_radius)]
    free.sort(key=lambda p: math.hypot(p.x - near.x, p.y - near.y))
    return free[:max(0, count)]


@dataclass(frozen=True)
class SupportView:
    """A free-standing piece of furniture of the static map (a table, a cabinet, a crate) and the
    poses to look at its top from close by, best first."""

    x: float                   # centre of its footprint on the map (m)
    y: float
    poses: Tuple[Pose2D, ...]  # free poses facing it, ``support_view_clearance`` out from a side


def support_views(mask: np.ndarray, resolution: float, origin: Tuple[float, float], params: FetchParams,
                  robot_radius: float, near: Tuple[float, float]) -> List[SupportView]:
    """The supports of the static map to look at from close by, in the order a tour from ``near``
    (the robot) visits them (nearest first, then nearest to the last).

    A support is a connected block of occupied cells not touching the map's border, of
    ``support_min_area``..``support_max_area`` and no side longer than ``support_max_side`` (walls are
    longer; a pillar is smaller). Its poses stand ``support_view_clearance`` out from the middle of each
    side of its bounding box, facing its centre, free for the robot's footprint: the long sides first
    (from there the head camera sees the whole top within ~1.2 m), then the nearer.

    Why: from the exploration waypoints (1.5-3 m from the tables) the map names a 5 cm toy brick
    only now and then (single views of one: "red lego" 5 of 7 from 0.8 and 1.2 m, not detected from
    2 m); from a table's side it is within 1.2 m.
    """
    from scipy import ndimage

    labels, _ = ndimage.label(mask, structure=np.ones((3, 3), bool))
    supports: List[SupportView] = []
    for i, box in enumerate(ndimage.find_objects(labels), start=1):
        rows, cols = box
        if rows.start == 0 or cols.start == 0 or rows.stop == mask.shape[0] or cols.stop == mask.shape[1]:
            continue
        area = float(np.count_nonzero(labels[box] == i)) * resolution ** 2
        x0, x1 = origin[0] + cols.start * resolution, origin[0] + cols.stop * resolution
        y0, y1 = origin[1] + rows.start * resolution, origin[1] + rows.stop * resolution
        sx, sy = x1 - x0, y1 - y0
        if not (params.support_min_area <= area <= params.support_max_area) or max(sx, sy) > params.support_max_side:
            continue
        cx, cy = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
        d = params.support_view_clearance
        # (pose, on a long side) out from each side's middle, facing the centre: the east and west
        # sides are sy long, the north and south sx; from a long side the far edge is nearer
        sides = [(Pose2D(x1 + d, cy, math.pi), sy >= sx), (Pose2D(x0 - d, cy, 0.0), sy >= sx),
                 (Pose2D(cx, y1 + d, -math.pi / 2), sx > sy), (Pose2D(cx, y0 - d, math.pi / 2), sx > sy)]
        free = [(p, long) for p, long in sides if clearance(mask, resolution, origin, p.x, p.y, robot_radius)]
        if not free:
            continue
        free.sort(key=lambda pl: (not pl[1], math.hypot(pl[0].x - near[0], pl[0].y - near[1])))
        supports.append(SupportView(cx, cy, tuple(p for p, _ in free)))
    tour: List[SupportView] = []
    at = near
    while supports:
        nxt = min(supports, key=lambda s: math.hypot(s.poses[0].x - at[0], s.poses[0].y - at[1]))
        supports.remove(nxt)
        tour.append(nxt)
        at = (nxt.poses[0].x, nxt.poses[0].y)
    return tour


#: how a grasp outcome's reason starts when the grasp pose estimator refused (no estimate, no grasp tried)
NO_GRASP_POSE = "no grasp pose"

#: shape words of a label whose footprint seen from above is round / square
ROUND_SHAPES = ("ball", "cylinder", "sphere")
SQUARE_SHAPES = ("cube", "box", "block")


#: the words of a label that promise as much height as width (a cube)
EQUAL_SIDED_SHAPES = ("cube",)
#: the words of a label that promise an object lower than it is wide (the toy brick: 3.7 cm on 5.1 cm);
#: not "brick": people call a cube that too (a training word of the cube kind), and it is a colour
FLAT_SHAPES = ("lego", "duplo")


def _words(text: str) -> List[str]:
    """The lower-case words of a query or label, without trailing punctuation ("the red lego." names
    a lego): every shape check and the look-alike wording read words the same way."""
    return [w.lower().strip(".,!?") for w in text.split()]


def expected_shape_words(query: str, label: str) -> str:
    """The words a close look is checked against: the user's ``query`` when it names a shape (the
    map's label may name another: a green cube the map called "green cylinder" was set aside as
    "not a cylinder" although a cube was asked for), else the map's ``label``."""
    return query if any(w in ROUND_SHAPES + SQUARE_SHAPES + FLAT_SHAPES for w in _words(query)) else label


def look_alike_query(query: str, look_alikes: Sequence[Tuple[str, str]]) -> str:
    """``query`` with each word that has a look-alike replaced by it ("bring the red lego" -> "bring
    the red cube"), or '' when it names none."""
    table = {w.lower(): alike for w, alike in look_alikes}
    words = query.split()
    swapped = [table.get(key, w) for key, w in zip(_words(query), words)]
    return " ".join(swapped) if swapped != words else ""


def footprint_mismatch(label: str, symmetric: bool) -> str:
    """Why a close look's footprint (``symmetric``: round) contradicts ``label``, or ''.

    The map's crop embedder, seeing an upright cylinder side-on from afar, can take it for a cube of
    the same colour (seeds 4 and 8 of the evaluation); from close by the grasp pose estimator sees
    its round top. Not conclusive on its own: under the RGB-D depth noise a cube's 5 cm top seen from
    1 m reads round in about half the views (docs/reference/perception.md), so the mission looks again before
    it believes it, and does not trust it from afar (:func:`height_mismatch` is conclusive)."""
    words = _words(label)
    if symmetric and any(w in SQUARE_SHAPES for w in words):
        return f"the close look shows a round object, not a {next(w for w in words if w in SQUARE_SHAPES)}"
    if not symmetric and any(w in ROUND_SHAPES for w in words):
        return f"the close look shows a square footprint, not a {next(w for w in words if w in ROUND_SHAPES)}"
    return ""


def height_mismatch(label: str, size: Optional[Sequence[float]], cube_max_aspect: float = 1.38,
                    cube_min_aspect: float = 0.0, brick_max_aspect: float = 0.0) -> str:
    """Why a close look's ``size`` (along, across, height), m, contradicts the shape ``label`` names, or ''.

    Conclusive checks of the height over the wider side (the aspect), each off at 0:

    * a "cube" is as high as it is wide: above ``cube_max_aspect`` it is another object (an upright
      cylinder stands 1.6x as high as wide). Measured under depth noise: cubes reach 1.28, cylinders
      start at 1.48 (docs/reference/perception.md).
    * a "cube" below ``cube_min_aspect`` is a flatter object (a toy brick: 0.73). Measured from the
      docking range: cubes 0.94-1.26, bricks 0.56-0.74; from ~1 m cubes read down to 0.77, so the
      caller leaves this one out for a look from afar.
    * a "lego"/"duplo" above ``brick_max_aspect`` is not the brick (a cube of its size: the map
      took one for "the red lego" in 2 of 12 fetches). Bricks read up to 0.78 from either range.

    0 or no size: not checked."""
    if size is None:
        return ""
    along, across, height = (float(v) for v in size)
    width = max(along, across)
    if width <= 0:
        return ""
    words = _words(label)
    aspect = height / width
    seen = f"an object {height * 100:.1f} cm high on a {width * 100:.1f} cm footprint"
    if any(w in EQUAL_SIDED_SHAPES for w in words):
        if cube_max_aspect > 0 and aspect > cube_max_aspect:
            return f"the close look shows {seen}, not a cube"
        if cube_min_aspect > 0 and aspect < cube_min_aspect:
            return f"the close look shows {seen}, flatter than a cube"
    flat = next((w for w in words if w in FLAT_SHAPES), None)
    if flat is not None and brick_max_aspect > 0 and aspect > brick_max_aspect:
        return f"the close look shows {seen}, too high for a {flat}"
    return ""


def too_wide(size: Optional[Sequence[float]], max_width: float) -> str:
    """Why a close look's ``size`` (along, across, height), m, is more than the hand can close on, or ''.

    The narrower side of the footprint is what the fingers close across; above ``max_width`` (the
    Panda hand opens 8 cm) no lift can hold it, whatever the map called it. Measured under the depth
    noise (``rlstack_perception.evaluate_grasp_pose --scene home_kinds --depth-noise``, both ranges):
    cubes and toy bricks read at most 5.1 cm; books, bowls, plates and buckets 7.6 cm or more from
    ~1 m (a part of one seen from close by can read narrower: then this does not refuse it).
    0 or no size: not checked."""
    if size is None or max_width <= 0:
        return ""
    narrow = min(float(size[0]), float(size[1]))
    if narrow <= max_width:
        return ""
    return (f"the close look shows an object {narrow * 100:.1f} cm across at its narrower side, "
            f"wider than the hand can take ({max_width * 100:.1f} cm)")


def _set_aside_code(outcome: GraspOutcome) -> FetchCode:
    """How the mission ends when a match set aside by ``outcome``'s close look was the last one:
    NOT_FOUND for another kind of object, GRASP_FAILED for one the hand cannot take."""
    return FetchCode.GRASP_FAILED if outcome.ungraspable else FetchCode.NOT_FOUND


def stand_pose_for_drop(x: float, y: float, yaw: float, carry_offset: float) -> Pose2D:
    """Where the base stands so that the carried object (``carry_offset`` ahead of it) is above (x, y)."""
    return Pose2D(x - carry_offset * math.cos(yaw), y - carry_offset * math.sin(yaw), yaw)


# ----------------------------------------------------------------------------- the mission
@dataclass
class FetchResult:
    code: FetchCode
    reason: str
    phase_durations: Dict[str, float] = field(default_factory=dict)
    step_durations: Dict[str, float] = field(default_factory=dict)   # seconds per :data:`STEPS` entry
    grasp_attempts: int = 0
    target: Optional[Match] = None
    distance_driven: float = 0.0


class FetchMission:
    """One fetch: ``FetchMission(ports, params, robot_radius).run(query, dropoff)``."""

    def __init__(self, ports: RobotPorts, params: FetchParams, robot_radius: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ports, self.p, self.robot_radius, self.clock = ports, params, robot_radius, clock
        self._phase: Optional[str] = None
        self._phase_t0 = 0.0
        self.durations: Dict[str, float] = {}
        self.step_durations: Dict[str, float] = {}
        self._steps: List[List] = []                  # the running steps, innermost last: [name, t0 of its last slice]
        self._views: Optional[List[Tuple[str, int, object]]] = None   # where exploring looks from (planned when first needed)
        self._next_view = 0                           # ... resumed here when asked again
        self._explore_deadline: Optional[float] = None
        self._last_answer: List[Match] = []           # the map's newest answer (near misses are taken from it)
        self._best_seen: Optional[Match] = None         # the best-scoring match of any score (NOT_FOUND's reason)

    # -- bookkeeping
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

    # -- the mission
    def run(self, query: str, dropoff: Pose2D) -> FetchResult:
        result = FetchResult(FetchCode.ERROR, "not started")
        try:
            if not query.strip():
                raise MissionAborted(FetchCode.ERROR, "empty query: say what to fetch, e.g. 'the yellow cube'")
            if not all(math.isfinite(v) for v in (dropoff.x, dropoff.y, dropoff.yaw)):
                raise MissionAborted(FetchCode.ERROR, "drop-off pose is not finite")
            target = self._fetch_the_right_object(query, result)
            result.target = target
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
            self._enter("DROP", "putting it down at the drop-off point")
            with self._step("put_down"):
                released = self.ports.release()
            if not released.ok:
                raise MissionAborted(FetchCode.RELEASE_FAILED,
                                     f"could not let go of '{target.label}' at the drop-off: {released.reason}")
            # no settle wait here: the release ends with the arm's move back to its carry pose, by
            # when the object put down 6 cm above the floor lies still
            result.code, result.reason = FetchCode.SUCCEEDED, f"brought '{target.label}' to the drop-off"
        except MissionAborted as exc:
            result.code, result.reason = exc.code, exc.reason
        self._close()
        result.phase_durations = dict(self.durations)
        result.step_durations = dict(self.step_durations)
        return result

    def _fetch_dropped(self, query: str, carried: Match, drop: _Dropped, result: FetchResult) -> Match:
        """The object fell out on the way: open the hand, go and look at where it most likely lies
        (under the carry point, ``carry_offset`` ahead of the base when the fall was felt) from
        ``floor_view_distance`` away (closer than ~0.72 m the head camera does not see the floor),
        or, with no free pose for that, back up ``drop_backoff``; then fetch the match of ``query``
        nearest to the fall within ``drop_search_radius``, turning in place to look around when none
        is in view. GRASP_FAILED when none turns up: the map still holds the object where it was
        picked from, so a search of the whole map would drive back to the empty table."""
        where = drop.where
        guess = (where.x + self.p.carry_offset * math.cos(where.yaw), where.y + self.p.carry_offset * math.sin(where.yaw))
        self._enter("RETURN", f"{drop.reason}; looking for it near ({guess[0]:.2f}, {guess[1]:.2f})")
        self.ports.recover_arm()
        mask, res, origin = self.ports.occupancy()
        base = self.ports.base_pose()
        views = plan_floor_approaches(mask, res, origin, guess[0], guess[1], self.p, self.robot_radius,
                                      near=(base.x, base.y))
        if not views or not self._drive_to(views[0].staging, "viewpoint of the fallen object").ok:
            self.ports.drive_straight(-self.p.drop_backoff)
        self.ports.clear_view()   # in the carry pose the arm hides the floor where the object lies
        looks = max(1, self.p.look_around_yaws)
        nearby: List[Match] = []
        for k in range(looks):
            self.ports.wait(self.p.settle_s)
            matches = [m for m in self._query(query)
                       if math.hypot(m.x - guess[0], m.y - guess[1]) <= self.p.drop_search_radius]
            # The map may still hold the object where it was picked up (within the radius when it
            # fell right after the grasp): not there any more. A near miss counts (a cube on the floor
            # seen from 1 m scores ~0.84): the close look from its staging pose confirms it first.
            fallen = best_match(matches, min(self.p.near_miss_score, self.p.min_match_score), avoid=[carried])
            nearby = sorted((m for m in matches if math.isfinite(m.score)), key=lambda m: -m.score)
            if fallen is not None:
                self.ports.recover_arm()   # back to the carry pose for the drive
                confirmed = fallen.score >= self.p.min_match_score
                self.ports.feedback("RETURN", f"'{fallen.label}' seen at ({fallen.x:.2f}, {fallen.y:.2f}), score "
                                              f"{fallen.score:.2f}: fetching it again")
                try:
                    return self._navigate_and_grasp(query, replace(fallen, confirmed=confirmed), result)
                except _WrongObject as exc:
                    raise MissionAborted(FetchCode.GRASP_FAILED, f"{drop.reason}; then {exc.reason}") from None
                except MissionAborted as exc:   # the reason tells the whole story: it fell out first
                    if exc.code in (FetchCode.CANCELED, FetchCode.ERROR):
                        raise
                    raise MissionAborted(exc.code, f"{drop.reason}; then {exc.reason}") from None
            if k < looks - 1:
                self.ports.turn(2 * math.pi / looks)
        self.ports.recover_arm()
        seen = ("the map's matches there: " + ", ".join(f"'{m.label}' at ({m.x:.2f}, {m.y:.2f}) {m.score:.2f}"
                                                        for m in nearby[:4])
                if nearby else "the map answered nothing there")
        status = self.ports.map_status()
        if status:
            seen += f"; the map: {status}"
        raise MissionAborted(FetchCode.GRASP_FAILED, f"{drop.reason}, and no match of '{query}' scoring "
                                                     f"{min(self.p.near_miss_score, self.p.min_match_score):g} or more "
                                                     f"was seen within {self.p.drop_search_radius:g} m of "
                                                     f"({guess[0]:.2f}, {guess[1]:.2f}) ({seen})")

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

    def _locate(self, query: str, avoid: Sequence[Match] = ()) -> Match:
        """The best match of ``query`` (none near ``avoid``): from the map as it is, else by exploring
        from the next unvisited viewpoint on (:meth:`_viewpoints`)."""
        if self._phase is None:
            self._enter("LOCATE", f"asking the semantic map for '{query}'")
        found = self._ask(query, avoid)
        if found is not None:
            return found
        if self._explore_deadline is None:
            self._enter("EXPLORE", f"'{query}' not in the map yet: exploring")
            self._explore_deadline = self.clock() + self.p.explore_timeout_s
        else:
            self._enter("EXPLORE", f"exploring on for '{query}'")
        deadline = self._explore_deadline
        views = self._viewpoints()
        seen: List[Match] = []

        def seen_on_the_way() -> bool:
            """Asked while the robot drives and turns: the map is filled by every camera frame, so the
            object is often named on the way, and the rest of the drive and the looks are not needed."""
            found_now = self._ask(query, avoid)
            if found_now is not None:
                seen.append(found_now)
            return found_now is not None

        until = seen_on_the_way if self.p.look_while_driving else None
        while self._next_view < len(views) and self.clock() <= deadline:
            kind, i, item = views[self._next_view]
            self._next_view += 1
            if kind == "waypoint":
                with self._step("explore_drive"):
                    found = self._visit_waypoint(i, item, query, avoid, deadline, until, seen)
            else:
                with self._step("support_look"):
                    found = self._look_at_support(i, item, query, avoid, until, seen)
            if found is not None:
                return found
        near = self._near_miss(avoid) or self._look_alike(query, avoid)
        if near is not None:
            return near
        best = self._best_seen
        seen_text = f"best: '{best.label}' scored {best.score:.2f}" if best is not None else \
            "the map returned no match at all"
        status = self.ports.map_status()
        looked = [k for k, _, _ in views[:self._next_view]]
        supports = sum(k == "support" for k, _, _ in views)
        supports_looked = f" and {looked.count('support')} of {supports} support(s)" if supports else ""
        raise MissionAborted(FetchCode.NOT_FOUND,
                             f"nothing in the semantic map matched '{query}' with score >= {self.p.min_match_score:g} "
                             f"after exploring {looked.count('waypoint')} of {len(views) - supports} waypoint(s)"
                             f"{supports_looked} ({seen_text}{'; the map: ' + status if status else ''})")

    def _viewpoints(self) -> List[Tuple[str, int, object]]:
        """Where exploring looks from, planned once from where the robot is when exploring starts:
        ("waypoint", i, (x, y, yaw)) for each exploration waypoint (a look around there), in the order
        of the shortest tour (:func:`tour_order`), then, with ``support_looks``, ("support", j,
        :class:`SupportView`) for each support of the static map (a look at its top from close by),
        nearest first from the last waypoint. (One tour through both, supports among the waypoints,
        was tried: the five support looks in the middle made the tour longer, and the development
        layouts' tables were reached later.)"""
        if self._views is not None:
            return self._views
        base = self.ports.base_pose()
        start = (base.x, base.y)
        waypoints = [("waypoint", i, w) for i, w in enumerate(self.p.explore_waypoints)]
        waypoints = [waypoints[k] for k in tour_order(start, [(w[0], w[1]) for _, _, w in waypoints])]
        # the supports' own tour starts where the waypoints end
        near = tuple(waypoints[-1][2][:2]) if waypoints else start
        supports: List[Tuple[str, int, object]] = []
        if self.p.support_looks:
            mask, res, origin = self.ports.occupancy()
            supports = [("support", j, v) for j, v in enumerate(
                support_views(mask, res, origin, self.p, self.robot_radius, near))]
        self._views = waypoints + supports
        return self._views

    def _visit_waypoint(self, i: int, waypoint: Tuple[float, float, float], query: str, avoid: Sequence[Match],
                        deadline: float, until: Optional[Callable[[], bool]], seen: List[Match]) -> Optional[Match]:
        """Drive to exploration waypoint ``i`` (or beside it) and look around there."""
        x, y, yaw = waypoint
        n_waypoints = len(self.p.explore_waypoints)
        self.ports.feedback("EXPLORE", f"waypoint {i + 1}/{n_waypoints} ({x:.1f}, {y:.1f})")
        # a waypoint the sensors already see cluttered is not driven to: navigation would refuse it
        # only after waiting for the obstacle to go (3 s a try)
        outcome = (NavOutcome(False, SENSED_BLOCKED) if self._sensed_blocked(Pose2D(x, y, yaw))
                   else self._navigate(Pose2D(x, y, yaw), until))
        if not outcome.ok and not seen:
            self._beside_waypoint(i, Pose2D(x, y, yaw), outcome, until)
        if seen:
            return self._seen_on_the_way(seen[-1], f"on the way to waypoint {i + 1}")
        n = max(1, self.p.look_around_yaws)
        with self._step("look_around"):
            for k in range(n):
                found = self._ask(query, avoid)
                if found is not None:
                    return found
                if self.clock() > deadline or k == n - 1 or self.p.look_around_yaws == 0:
                    return None
                self.ports.turn(2 * math.pi / n, until)  # look around in place
                if seen:
                    return self._seen_on_the_way(seen[-1], f"while looking around at waypoint {i + 1}")
        return None

    def _seen_on_the_way(self, found: Match, where: str) -> Match:
        self.ports.feedback("EXPLORE", f"'{found.label}' seen {where} at ({found.x:.2f}, {found.y:.2f}), score "
                                       f"{found.score:.2f}: going for it")
        return found

    def _look_at_support(self, i: int, support: SupportView, query: str, avoid: Sequence[Match],
                         until: Optional[Callable[[], bool]], seen: List[Match]) -> Optional[Match]:
        """Look at the top of support ``i`` of the static map from its side (:func:`support_views`) and
        ask; a support none of whose poses navigation reaches is passed over."""
        n_supports = sum(k == "support" for k, _, _ in self._viewpoints())
        self.ports.feedback("EXPLORE", f"looking at support {i + 1}/{n_supports} at "
                                       f"({support.x:.1f}, {support.y:.1f}) from close by")
        failed = []
        for pose in support.poses:
            # a pose where navigation's sensors already see something (objects on the floor) is
            # not driven to: navigation would refuse it only on arrival, and driving into the
            # clutter boxed the robot in once (brick fetch seed 6: three supports passed over)
            if self._sensed_blocked(pose):
                failed.append(f"({pose.x:.2f}, {pose.y:.2f}) has obstacles the sensors see within "
                              f"the robot radius {self.robot_radius:.2f} m")
                continue
            outcome = self._navigate(pose, until)
            if seen:
                return self._seen_on_the_way(seen[-1], f"on the way to support {i + 1}")
            if outcome.ok:
                break
            failed.append(outcome.reason)
        else:
            self.ports.feedback("EXPLORE", f"support {i + 1} passed over: no pose beside it reached "
                                           f"({'; '.join(failed)})")
            return None
        self.ports.wait(self.p.settle_s)   # the map takes in the views from here
        return self._ask(query, avoid)

    def _sensed_blocked(self, pose: Pose2D) -> bool:
        """True when navigation's sensed obstacles lie within the robot's radius of ``pose``
        (False when they are unknown)."""
        sensed = self.ports.sensed_obstacles()
        static, res, origin = self.ports.occupancy()
        if sensed is None or sensed.shape != static.shape:
            return False
        return not clearance(sensed.astype(bool), res, origin, pose.x, pose.y, self.robot_radius)

    def _ask(self, query: str, avoid: Sequence[Match]) -> Optional[Match]:
        """The map's best match of ``query`` at or above ``min_match_score`` (none near ``avoid``); the
        best of any score is kept for the NOT_FOUND reason (a near miss reads differently from a map
        that holds nothing)."""
        matches = self._last_answer = self._query(query)
        for m in matches:
            if math.isfinite(m.score) and (self._best_seen is None or m.score > self._best_seen.score):
                self._best_seen = m
        return best_match(matches, self.p.min_match_score, avoid=avoid)

    def _near_miss(self, avoid: Sequence[Match]) -> Optional[Match]:
        """Exploring is over and nothing reached ``min_match_score``: the best match scoring at least
        ``near_miss_score`` (none near ``avoid``), marked unconfirmed. A far view scores lower than a
        close one (with depth noise a 5 cm cube 1.2 m away scored 0.84 against 0.85), so it is looked
        at from its staging pose before anything is lifted (:meth:`_navigate_and_grasp`)."""
        if self.p.near_miss_score >= self.p.min_match_score:
            return None
        matches = [m for m in self._last_answer if m.score < self.p.min_match_score]
        near = best_match(matches, self.p.near_miss_score, avoid=avoid)
        if near is None:
            return None
        self.ports.feedback("EXPLORE", f"best match '{near.label}' at ({near.x:.2f}, {near.y:.2f}) scored "
                                       f"{near.score:.2f}, under {self.p.min_match_score:g}: looking at it from close by")
        return replace(near, confirmed=False)

    def _look_alike(self, query: str, avoid: Sequence[Match]) -> Optional[Match]:
        """Exploring is over and nothing matched ``query``: the best match of its look-alike
        wording (:attr:`FetchParams.look_alikes`; none near ``avoid``), to be looked at from close by.
        The map cannot tell a toy brick from a cube of its colour from 1-2 m (its studs do not show
        in the crop) and may have named the brick "red cube"; the grasp pose's height can.

        Any answer the map gives for the look-alike wording (above its own threshold) is a candidate,
        best first, not only those reaching ``min_match_score``: the close look decides (in a fetch of
        seed 2 the one confident "red cube" was a cube, refused, and the brick, which the map's
        markers also named "red cube", was never looked at: it scored under ``min_match_score``).
        Each one refused counts as a match set aside."""
        alike = look_alike_query(query, self.p.look_alikes)
        if not alike:
            return None
        match = best_match(self._query(alike), -math.inf, avoid=avoid)
        if match is None:
            return None
        self.ports.feedback("EXPLORE", f"nothing matched '{query}'; '{match.label}' at ({match.x:.2f}, {match.y:.2f}) "
                                       f"matches '{alike}' ({match.score:.2f}), which looks the same from afar: looking at it from close by")
        return replace(match, confirmed=False, look_alike=alike)

    def _confirm(self, answer: Sequence[Match], target: Match) -> Match:
        """A near miss seen again from its staging pose (``answer``: the map's answer there): the
        map's match at it if it now reaches ``min_match_score``; else the match is set aside
        (:class:`_WrongObject`, NOT_FOUND)."""
        best = best_match(answer, -math.inf, near=(target.x, target.y), max_shift=self.p.reobserve_max_shift)
        if best is not None and best.score >= self.p.min_match_score:
            self.ports.feedback(self._phase or "NAVIGATE", f"'{best.label}' scored {best.score:.2f} from close by: fetching it")
            return best
        score = f"{best.score:.2f}" if best is not None else "nothing"
        raise _WrongObject(f"'{target.label}' at ({target.x:.2f}, {target.y:.2f}) scored {target.score:.2f} from afar and "
                           f"{score} from close by, under {self.p.min_match_score:g}")

    def _beside_waypoint(self, i: int, waypoint: Pose2D, failed: NavOutcome,
                         until: Optional[Callable[[], bool]] = None) -> NavOutcome:
        """Waypoint ``i`` could not be reached: try free poses beside it; look from where the robot ends."""
        mask, res, origin = self.ports.occupancy()
        for alt in alternate_viewpoints(mask, res, origin, waypoint, self.ports.base_pose(),
                                        self.p.waypoint_alternate_distance, self.robot_radius,
                                        self.p.waypoint_alternates):
            if self._sensed_blocked(alt):
                failed = NavOutcome(False, SENSED_BLOCKED)
                continue
            self.ports.feedback("EXPLORE", f"waypoint {i + 1} not reached ({failed.reason}); "
                                           f"trying beside it at ({alt.x:.1f}, {alt.y:.1f})")
            outcome = self._navigate(alt, until)
            if outcome.ok or outcome.interrupted:
                return outcome
            failed = outcome
        self.ports.feedback("EXPLORE", f"waypoint {i + 1} not reached: {failed.reason}; looking from here")
        return failed

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
            approaches = plan_approaches(mask, res, origin, target.x, target.y, self.p, self.robot_radius)
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

    def _navigate(self, pose: Pose2D, until: Optional[Callable[[], bool]] = None) -> NavOutcome:
        """One navigation goal (``until``: :meth:`RobotPorts.navigate`). Lost localisation ends the
        mission: every pose after it would be driven to on a wrong idea of where the robot is."""
        outcome = self.ports.navigate(pose, until) if until is not None else self.ports.navigate(pose)
        if outcome.localization_lost:
            raise MissionAborted(FetchCode.LOCALIZATION_LOST, f"navigation stopped: localisation lost ({outcome.reason})")
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

    def _navigate_and_grasp(self, query: str, target: Match, result: FetchResult) -> Match:
        failures: List[str] = []
        for attempt in range(1, self.p.max_grasp_attempts + 1):
            self._enter("NAVIGATE", f"to '{target.label}' at ({target.x:.2f}, {target.y:.2f}), grasp attempt {attempt}")
            reached = None
            nav_reasons = []
            tried: List[Pose2D] = []
            for around_sensed in (False, True):
                # every pose planned on the static map blocked (an object on the floor beside the
                # table): plan again around what the sensors mark, and try the poses not tried yet
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
                        reached = candidate
                        break
                    nav_reasons.append(outcome.reason)
                if reached is not None:
                    break
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
                if not target.confirmed and not target.look_alike:   # a look-alike: the close look's shape check decides
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
                    raise MissionAborted(FetchCode.GRASP_FAILED, f"lost '{target.label}' while stowing: {stowed.reason}")
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

    def _return(self, dropoff: Pose2D) -> None:
        self._enter("RETURN", f"carrying to ({dropoff.x:.2f}, {dropoff.y:.2f})")
        stand = stand_pose_for_drop(dropoff.x, dropoff.y, dropoff.yaw, self.p.carry_offset)
        with self._step("carry"):
            outcome = self._drive_to(stand, "drop-off")
        if outcome.dropped:
            raise _Dropped(f"the carried object fell out of the hand on the way to the drop-off ({outcome.reason})",
                           self.ports.base_pose())
        if not outcome.ok:
            raise MissionAborted(FetchCode.UNREACHABLE, f"could not reach the drop-off: {outcome.reason}")
