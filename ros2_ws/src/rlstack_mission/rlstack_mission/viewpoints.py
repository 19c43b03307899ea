"""Where the robot looks from while it explores (pure Python, no rclpy; geometry on the static
occupancy grid): the order of the exploration waypoints (:func:`tour_order`), free poses beside a
waypoint that cannot be reached (:func:`alternate_viewpoints`), and the poses to look at the top of
each free-standing support (table, cabinet, crate) from close by (:func:`support_views`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .approaches import clearance
from .mission_types import FetchParams, Pose2D


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


def support_boxes(mask: np.ndarray, resolution: float, origin: Tuple[float, float],
                  params: FetchParams) -> List[Tuple[float, float, float, float]]:
    """The free-standing supports of the static map (tables, a cabinet, a crate) as bounding boxes
    (x0, y0, x1, y1) in the map frame: connected blocks of occupied cells not touching the map's
    border, of ``support_min_area``..``support_max_area`` and no side longer than ``support_max_side``
    (walls are longer; a pillar is smaller)."""
    from scipy import ndimage

    labels, _ = ndimage.label(mask, structure=np.ones((3, 3), bool))
    boxes = []
    for i, box in enumerate(ndimage.find_objects(labels), start=1):
        rows, cols = box
        if rows.start == 0 or cols.start == 0 or rows.stop == mask.shape[0] or cols.stop == mask.shape[1]:
            continue
        area = float(np.count_nonzero(labels[box] == i)) * resolution ** 2
        x0, x1 = origin[0] + cols.start * resolution, origin[0] + cols.stop * resolution
        y0, y1 = origin[1] + rows.start * resolution, origin[1] + rows.stop * resolution
        if not (params.support_min_area <= area <= params.support_max_area) or \
                max(x1 - x0, y1 - y0) > params.support_max_side:
            continue
        boxes.append((x0, y0, x1, y1))
    return boxes


def sees_support(mask: np.ndarray, resolution: float, origin: Tuple[float, float], point: Tuple[float, float],
                 box: Tuple[float, float, float, float], view_range: float) -> bool:
    """Whether a look around at ``point`` sees the top of the support ``box`` (x0, y0, x1, y1): its
    nearest edge within ``view_range`` and the straight line to that edge crossing no occupied cell of
    the static map outside the support itself (a wall or other furniture in between hides it)."""
    x0, y0, x1, y1 = box
    px, py = point
    ex, ey = min(max(px, x0), x1), min(max(py, y0), y1)   # the box's nearest point
    length = math.hypot(ex - px, ey - py)
    if length > view_range:
        return False
    steps = max(1, int(math.ceil(length / (0.5 * resolution))))
    margin = 1.5 * resolution   # the support's own cells, as rasterised, reach a little past its box
    for k in range(steps + 1):
        x, y = px + (ex - px) * k / steps, py + (ey - py) * k / steps
        if x0 - margin <= x <= x1 + margin and y0 - margin <= y <= y1 + margin:
            return True   # reached the support
        col, row = int((x - origin[0]) / resolution), int((y - origin[1]) / resolution)
        if 0 <= row < mask.shape[0] and 0 <= col < mask.shape[1] and mask[row, col]:
            return False
    return True


#: what a look around costs in metres of driving, for :func:`discovery_order`: in the home graph a
#: look around (a 270 deg sweep at turn_speed, the map asked before and after) takes 3-6 s,
#: and exploration drives cover ~0.25 m/s on average (turns in place and slow-downs near furniture)
LOOK_AROUND_COST_M = 1.5


def discovery_order(start: Tuple[float, float], points: Sequence[Tuple[float, float]],
                    sees: Sequence[Sequence[int]], max_exact: int = 8) -> List[int]:
    """Indices of ``points`` in the order that finds an object soonest on average, when it lies on
    one of the supports (every support equally likely) and a support is found from the first point
    that sees it (``sees[i]``: the supports point ``i`` sees). Minimises the mean cost, in metres
    driven plus :data:`LOOK_AROUND_COST_M` per look around, until each support is first seen; ties
    (and the points that see nothing new, after the last support is seen) go by the shortest tour.
    Over ``max_exact`` points: :func:`tour_order` (the exact search is over every order).

    Why: the shortest tour through the home's waypoints reached the third table only at its fourth
    waypoint (50-60 s into exploring); ordered by when each support is first seen, every table is
    seen by the third waypoint, and a look around where no support is in view (the robot's start
    at the home's centre) is left until after."""
    pts = [(float(x), float(y)) for x, y in points]
    if len(pts) > max_exact or not pts:
        return tour_order(start, pts, max_exact)
    supports = set().union(*[set(s) for s in sees])

    def cost(order: Sequence[int]) -> Tuple[float, float]:
        total, waited, (x, y), found = 0.0, 0.0, start, set()
        for k in order:
            total += math.hypot(pts[k][0] - x, pts[k][1] - y) + LOOK_AROUND_COST_M
            x, y = pts[k]
            new = set(sees[k]) - found
            waited += total * len(new)
            found |= new
        return (waited / max(1, len(supports)), total)

    return list(min(itertools.permutations(range(len(pts))), key=cost))


@dataclass(frozen=True)
class SupportView:
    """A free-standing piece of furniture of the static map (a table, a cabinet, a crate) and the
    poses to look at its top from close by, best first."""

    x: float                   # centre of its footprint on the map (m)
    y: float
    poses: Tuple[Pose2D, ...]  # free poses facing it, ``support_view_clearance`` out from a side


def support_views(mask: np.ndarray, resolution: float, origin: Tuple[float, float], params: FetchParams,
                  robot_radius: float, near: Tuple[float, float],
                  boxes: Optional[Sequence[Tuple[float, float, float, float]]] = None) -> List[SupportView]:
    """The supports of the static map to look at from close by, in the order a tour from ``near``
    (the robot) visits them (nearest first, then nearest to the last). ``boxes``: the map's
    :func:`support_boxes` where the caller has them already.

    The supports are those of :func:`support_boxes`. A support's poses stand
    ``support_view_clearance`` out from the middle of each side of its bounding box, facing its
    centre, free for the robot's footprint: the long sides first (from there the head camera sees
    the whole top within ~1.2 m), then the nearer.

    Why: from the exploration waypoints (1.5-3 m from the tables) the map names a 5 cm toy brick
    only now and then (single views of one: "red lego" 5 of 7 from 0.8 and 1.2 m, not detected from
    2 m); from a table's side it is within 1.2 m.
    """
    supports: List[SupportView] = []
    for x0, y0, x1, y1 in (support_boxes(mask, resolution, origin, params) if boxes is None else boxes):
        sx, sy = x1 - x0, y1 - y0
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
