"""Where the robot stands to grasp an object and to put it down (pure Python, no rclpy; geometry on
the static occupancy grid): the free side of the object's support nearest to it
(:func:`plan_approaches`), free poses around an object on the floor (:func:`plan_floor_approaches`,
:func:`square_floor_approach`), the map grown around what navigation's sensors mark
(:func:`grow_sensed_obstacles`), and the stand pose behind a drop-off (:func:`stand_pose_for_drop`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

import numpy as np

from .mission_types import FetchParams, Pose2D


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
                    params: FetchParams, robot_radius: float, near: Optional[Tuple[float, float]] = None
                    ) -> List[Approach]:
    """Ways to stand at the object's support, best (object nearest to the edge) first, one per side.
    With ``near`` (the robot), the sides within ``approach_edge_margin`` of the best edge distance come
    first, the staging pose nearest ``near`` first: the arm reaches the object as well from either, and
    the other side of a table can be a drive round it there and back.

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
    if near is not None and out:
        equal = [a for a in out if a.edge_distance <= out[0].edge_distance + params.approach_edge_margin]
        equal.sort(key=lambda a: math.hypot(a.staging.x - near[0], a.staging.y - near[1]))
        out = equal + out[len(equal):]
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


def stand_pose_for_drop(x: float, y: float, yaw: float, carry_offset: float) -> Pose2D:
    """Where the base stands so that the carried object (``carry_offset`` ahead of it) is above (x, y)."""
    return Pose2D(x - carry_offset * math.cos(yaw), y - carry_offset * math.sin(yaw), yaw)


def drop_stand_poses(x: float, y: float, yaw: float, carry_offset: float, headings: int) -> List[Pose2D]:
    """The stand poses around the drop-off point (x, y) at ``headings`` headings 360 deg / n apart, the
    asked ``yaw`` first, then the others nearest it first (each side in turn, counter-clockwise first):
    from each, the carried object is above (x, y)."""
    n = max(1, int(headings))
    step = 2.0 * math.pi / n
    offsets = sorted(range(n), key=lambda k: (min(k, n - k), k > n - k))
    return [stand_pose_for_drop(x, y, math.remainder(yaw + (k if k <= n - k else k - n) * step, 2.0 * math.pi),
                                carry_offset) for k in offsets]
