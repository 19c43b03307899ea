"""LOCATE and EXPLORE (a part of :class:`rlstack_mission.fetch.FetchMission`, pure Python): ask the
semantic map; when nothing matches, drive the waypoint tour (in the order that sees the static
map's supports soonest), looking around at each waypoint (or beside it), then look at each
support's top from its side (:mod:`rlstack_mission.viewpoints`), asking again on the way; after
that a near miss or a look-alike match is looked at from close by.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable, List, Optional, Sequence, Tuple

from .checks import best_match, look_alike_query, named_round_for_square
from .driving import Driving
from .mission_types import SENSED_BLOCKED, FetchCode, Match, MissionAborted, NavOutcome, Pose2D
from .viewpoints import SupportView, alternate_viewpoints, discovery_order, sees_support, support_boxes, support_views


class Exploring(Driving):
    """Finding a match of the query: :meth:`_locate`."""

    def __init__(self) -> None:
        super().__init__()
        # where exploring looks from (planned when first needed)
        self._views: Optional[List[Tuple[str, int, object]]] = None
        self._next_view = 0                           # ... resumed here when asked again
        self._explore_deadline: Optional[float] = None
        self._last_answer: List[Match] = []           # the map's newest answer (near misses are taken from it)
        self._best_seen: Optional[Match] = None         # the best-scoring match of any score (NOT_FOUND's reason)

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
                ahead = _position(views[self._next_view]) if self._next_view < len(views) else None
                with self._step("explore_drive"):
                    found = self._visit_waypoint(i, item, query, avoid, deadline, until, seen, ahead)
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
        that sees the static map's supports soonest (:func:`discovery_order`; a waypoint sees the
        supports within ``waypoint_view_range``), then, with ``support_looks``, ("support", j,
        :class:`SupportView`) for each support of the static map (a look at its top from close by),
        nearest first from the last waypoint. (One tour through both, supports among the waypoints,
        was tried: the five support looks in the middle made the tour longer, and the development
        layouts' tables were reached later.)"""
        if self._views is not None:
            return self._views
        base = self.ports.base_pose()
        start = (base.x, base.y)
        mask, res, origin = self.ports.occupancy()
        boxes = support_boxes(mask, res, origin, self.p)
        points = [(w[0], w[1]) for w in self.p.explore_waypoints]
        view = self.p.waypoint_view_range
        sees = [[j for j, box in enumerate(boxes) if sees_support(mask, res, origin, pt, box, view)] for pt in points]
        waypoints = [("waypoint", k, self.p.explore_waypoints[k]) for k in discovery_order(start, points, sees)]
        # the supports' own tour starts where the waypoints end
        near = tuple(waypoints[-1][2][:2]) if waypoints else start
        supports: List[Tuple[str, int, object]] = []
        if self.p.support_looks:
            supports = [("support", j, v) for j, v in enumerate(
                support_views(mask, res, origin, self.p, self.robot_radius, near, boxes))]
        self._views = waypoints + supports
        return self._views

    def _visit_waypoint(self, i: int, waypoint: Tuple[float, float, float], query: str, avoid: Sequence[Match],
                        deadline: float, until: Optional[Callable[[], bool]], seen: List[Match],
                        ahead: Optional[Tuple[float, float]] = None) -> Optional[Match]:
        """Drive to exploration waypoint ``i`` (or beside it; arriving at any heading) and look around
        there: one sweep through ``look_around_yaws`` headings, turned the way that ends facing
        ``ahead`` (where exploring goes next) as nearly as it can."""
        x, y, yaw = waypoint
        n_waypoints = len(self.p.explore_waypoints)
        self.ports.feedback("EXPLORE", f"waypoint {i + 1}/{n_waypoints} ({x:.1f}, {y:.1f})")
        # a waypoint the sensors already see cluttered is not driven to: navigation would refuse it
        # only after waiting for the obstacle to go (3 s a try)
        outcome = (NavOutcome(False, SENSED_BLOCKED) if self._sensed_blocked(Pose2D(x, y, yaw))
                   else self._navigate(Pose2D(x, y, yaw), until, any_heading=True))
        if not outcome.ok and not seen:
            self._beside_waypoint(i, Pose2D(x, y, yaw), outcome, until)
        if seen:
            return self._seen_on_the_way(seen[-1], f"on the way to waypoint {i + 1}")
        n = self.p.look_around_yaws
        with self._step("look_around"):
            found = self._ask(query, avoid)
            if found is not None or n <= 1 or self.clock() > deadline:
                return found
            # one sweep, not a stop at each heading: the map takes in frames while the base turns,
            # and each stop cost ~0.5 s of slowing down and starting again
            self.ports.turn(_sweep(self.ports.base_pose(), 2 * math.pi * (n - 1) / n, ahead), until)
            if seen:
                return self._seen_on_the_way(seen[-1], f"while looking around at waypoint {i + 1}")
            return self._ask(query, avoid)

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
                                       f"{near.score:.2f}, under {self.p.min_match_score:g}: looking at it from "
                                       "close by")
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
        Each one refused counts as a match set aside.

        With "cube=thing" every object of the asked colour is a candidate ("the blue cube" asks "the
        blue thing"): on MuJoCo renders the map named a blue cube "blue wedge" and a green one "green
        bunny", its colours right; the close look's height and footprint checks of "cube" decide. An
        answer the map names round is passed over (:func:`named_round_for_square`)."""
        alike = look_alike_query(query, self.p.look_alikes)
        if not alike:
            return None
        answers = [m for m in self._query(alike) if not named_round_for_square(query, m.label)]
        match = best_match(answers, -math.inf, avoid=avoid)
        if match is None:
            return None
        self.ports.feedback("EXPLORE", f"nothing matched '{query}'; '{match.label}' at ({match.x:.2f}, {match.y:.2f}) "
                                       f"matches '{alike}' ({match.score:.2f}), which can look the same from afar: "
                                       "looking at it from close by, where its shape decides")
        return replace(match, confirmed=False, look_alike=alike)

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


def _position(view: Tuple[str, int, object]) -> Tuple[float, float]:
    """Where the robot goes for a viewpoint of :meth:`Exploring._viewpoints`."""
    kind, _, item = view
    if kind == "waypoint":
        return (item[0], item[1])
    pose = item.poses[0]
    return (pose.x, pose.y)


def _sweep(base: Pose2D, angle: float, ahead: Optional[Tuple[float, float]]) -> float:
    """A look around of ``angle`` (rad) from ``base``, signed (+ counter-clockwise) so that it ends
    facing ``ahead`` as nearly as it can: the drive there then starts with less turning in place."""
    if ahead is None or math.hypot(ahead[0] - base.x, ahead[1] - base.y) < 1e-6:
        return angle
    toward = math.atan2(ahead[1] - base.y, ahead[0] - base.x)
    left = abs(math.remainder(base.yaw + angle - toward, 2 * math.pi))
    right = abs(math.remainder(base.yaw - angle - toward, 2 * math.pi))
    return angle if left <= right else -angle
