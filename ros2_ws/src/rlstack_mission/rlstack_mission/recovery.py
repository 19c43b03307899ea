"""Recovery when the carried object is lost (a part of :class:`rlstack_mission.fetch.FetchMission`,
pure Python): the object fell out of the hand on the way to the drop-off (or the hand arrived
empty), so the robot looks where it most likely lies and fetches it again from the floor.
(A match set aside as the wrong object, or out of reach, is the state machine's: the search goes
on from LOCATE, :mod:`rlstack_mission.fetch`; a failed lift's retry is
:meth:`rlstack_mission.grasping.Grasping._navigate_and_grasp`'s.)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import List

from .approaches import plan_floor_approaches
from .checks import best_match
from .grasping import Grasping
from .mission_types import FetchCode, FetchResult, Match, MissionAborted, _Dropped, _WrongObject


class Recovery(Grasping):
    """A dropped object fetched again: :meth:`_fetch_dropped`."""

    def _fetch_dropped(self, query: str, carried: Match, drop: _Dropped, result: FetchResult) -> Match:
        """The object fell out on the way: open the hand, go and look at where it most likely lies
        (under the carry point, ``carry_offset`` ahead of the base when the fall was felt) from
        ``floor_view_distance`` away (closer than ~0.72 m the head camera does not see the floor),
        or, with no free pose for that, back up ``drop_backoff``; then fetch the match of ``query``
        nearest to the fall within ``drop_search_radius``, turning in place to look around when none
        is in view. GRASP_FAILED when none turns up: the map still holds the object where it was
        picked from, so a search of the whole map would drive back to the empty table."""
        where = drop.where
        guess = (where.x + self.p.carry_offset * math.cos(where.yaw),
                 where.y + self.p.carry_offset * math.sin(where.yaw))
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
