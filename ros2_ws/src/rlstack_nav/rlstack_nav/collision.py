"""Collision check along the next stretch of the path (no rclpy).

The robot is a circle of radius ``robot_radius`` about ``base_link``. A path point collides when
its cell is lethal in the static costmap (closer than the radius to a map obstacle) or when a
dynamic obstacle point (depth camera, injected) lies closer than ``robot_radius`` to it. Only the
stretch from the robot's closest path point to ``check_distance`` metres further is checked: that
is what the controller will drive through before the next cycles can react.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from rlstack_nav.grid import Costmap


@dataclass
class CollisionResult:
    blocked: bool
    distance_along: float = math.inf                 # m from the robot's path point to the first collision
    point: Optional[Tuple[float, float]] = None      # map-frame path point that collides
    source: str = ""                                 # "map" or "obstacle"

    def describe(self) -> str:
        if not self.blocked:
            return "path clear"
        return (f"path blocked by {'a map obstacle' if self.source == 'map' else 'an obstacle seen by the sensors'} "
                f"{self.distance_along:.2f} m ahead, at ({self.point[0]:.2f}, {self.point[1]:.2f})")


def check_path(costmap: Costmap, path: np.ndarray, start_index: int, check_distance: float,
               obstacle_points: Optional[np.ndarray] = None, robot_radius: Optional[float] = None,
               step: Optional[float] = None, skip_distance: float = 0.0) -> CollisionResult:
    """Check ``path[start_index:]`` up to ``check_distance`` m of arc length.

    :param obstacle_points: (N, 2) map-frame dynamic obstacle points
    :param robot_radius: defaults to the costmap's
    :param step: spacing of the checked points (default: the map resolution)
    :param skip_distance: do not report collisions in the first metres (0: check from the robot)
    """
    path = np.asarray(path, float).reshape(-1, 2)
    if len(path) == 0 or start_index >= len(path):
        return CollisionResult(False)
    radius = costmap.params.robot_radius if robot_radius is None else robot_radius
    step = step or costmap.resolution
    seg = path[start_index:]
    if len(seg) > 1:
        d = np.hypot(*np.diff(seg, axis=0).T)
        cum = np.concatenate([[0.0], np.cumsum(d)])
    else:
        cum = np.zeros(1)
    n = max(2, int(math.ceil(min(check_distance, cum[-1]) / step)) + 1)
    s = np.linspace(0.0, min(check_distance, cum[-1]), n)
    xs = np.interp(s, cum, seg[:, 0]) if len(seg) > 1 else np.full(n, seg[0, 0])
    ys = np.interp(s, cum, seg[:, 1]) if len(seg) > 1 else np.full(n, seg[0, 1])
    active = s >= skip_distance
    first = math.inf
    hit = None
    source = ""
    grid = costmap.grid
    r, c = grid.world_to_index(xs, ys)
    inside = grid.contains(r, c)
    lethal = np.ones(n, bool)
    lethal[inside] = costmap.lethal[r[inside], c[inside]]
    lethal &= active
    lethal &= ~_escaping(costmap, r, c, inside, lethal)
    if lethal.any():
        k = int(np.argmax(lethal))
        first, hit, source = float(s[k]), (float(xs[k]), float(ys[k])), "map"
    if obstacle_points is not None and len(obstacle_points):
        obs = np.asarray(obstacle_points, float).reshape(-1, 2)
        # only obstacles near the checked stretch matter
        lo = np.array([xs.min(), ys.min()]) - radius
        hi = np.array([xs.max(), ys.max()]) + radius
        near = np.all((obs >= lo) & (obs <= hi), axis=1)
        obs = obs[near]
        if len(obs):
            d2 = (xs[:, None] - obs[None, :, 0]) ** 2 + (ys[:, None] - obs[None, :, 1]) ** 2
            bad = (d2.min(axis=1) < radius * radius) & active
            if bad.any():
                k = int(np.argmax(bad))
                if s[k] < first:
                    first, hit, source = float(s[k]), (float(xs[k]), float(ys[k])), "obstacle"
    if hit is None:
        return CollisionResult(False)
    return CollisionResult(True, first, hit, source)


def _escaping(costmap: Costmap, r: np.ndarray, c: np.ndarray, inside: np.ndarray, lethal: np.ndarray) -> np.ndarray:
    """The leading points of a path that starts inside the lethal zone (an obstacle the sensors saw
    came within the robot's radius, or the estimate moved it there) and that come no closer to any
    obstacle than the start: the way out (the planner's escape prefix). Not collisions; else every
    path from there is blocked and the robot stays boxed in until the obstacle is forgotten
    (``obstacle_persistence``; Nav2's costmap clears the footprint for the same reason)."""
    escaping = np.zeros(len(lethal), bool)
    if not len(lethal) or not inside[0] or not lethal[0] or costmap.obstacles[r[0], c[0]]:
        return escaping
    d = np.full(len(lethal), -np.inf)
    d[inside] = costmap.distance[r[inside], c[inside]]
    tol = 0.5 * costmap.resolution   # the distance field's own discretisation
    for k in range(len(lethal)):
        if not lethal[k] or d[k] < d[0] - tol:
            break
        escaping[k] = True
    return escaping


def point_clearance(costmap: Costmap, x: float, y: float, obstacle_points: Optional[np.ndarray] = None,
                    robot_radius: Optional[float] = None) -> float:
    """Free distance (m) between the robot's circle at (x, y) and the nearest obstacle (map or dynamic);
    negative when overlapping."""
    radius = costmap.params.robot_radius if robot_radius is None else robot_radius
    d = costmap.distance_at(x, y)
    if obstacle_points is not None and len(obstacle_points):
        obs = np.asarray(obstacle_points, float).reshape(-1, 2)
        d = min(d, float(np.min(np.hypot(obs[:, 0] - x, obs[:, 1] - y))))
    return d - radius
