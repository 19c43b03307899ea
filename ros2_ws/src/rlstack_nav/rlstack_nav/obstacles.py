"""Obstacles seen by a depth camera, kept on a grid aligned with the static map (no rclpy).

* :func:`depth_to_points`: a depth image (optical-axis metres, NaN = no return, ROS
  ``CameraInfo`` intrinsics) and the optical frame's pose in the map frame -> 3-D points.
* :class:`ObstacleLayer`: marks the cells of points whose height is within
  ``[min_obstacle_height, max_obstacle_height]`` (the floor and the space above the robot are
  ignored; with ``floor_noise_per_m2`` the floor threshold rises with depth squared, as a stereo
  camera's noise does), outside the robot's own circle (``self_filter_radius``: the camera sees the arm) and
  not already an obstacle of the static map (``static_margin``, growing with ``static_noise_per_m2`` x
  depth squared). It clears a marked cell when a later frame looks
  *through* it (the cell, projected into the new image, has a farther depth return or none) or after
  ``persistence`` seconds. Obstacles can also be injected directly (``add_points``), which is how
  the ``~/obstacles`` topic of the node feeds it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from rlstack_bundle.frames import quat_to_matrix  # noqa: F401 - the navigation modules import it from here
from rlstack_nav.grid import OccupancyGrid


def yaw_from_quat(q: Sequence[float]) -> float:
    x, y, z, w = (float(v) for v in q)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


@dataclass
class CameraModel:
    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int


def depth_to_points(depth: np.ndarray, cam: CameraModel, rotation: np.ndarray, translation: Sequence[float],
                    stride: int = 4, min_range: float = 0.1, max_range: float = 4.0,
                    return_depth: bool = False):
    """Back-project every ``stride``-th pixel: ``X = (u - cx) z / fx``, ``Y = (v - cy) z / fy``,
    ``Z = z`` in the optical frame, then ``R @ p + t`` into the parent frame. Returns (N, 3), and
    with ``return_depth`` also each point's depth ``z`` (N,)."""
    d = np.asarray(depth, np.float32)
    if d.ndim != 2:
        raise ValueError(f"depth image must be 2-D, got shape {d.shape}")
    stride = max(1, int(stride))
    v, u = np.mgrid[0:d.shape[0]:stride, 0:d.shape[1]:stride]
    z = d[v, u].astype(np.float64)
    ok = np.isfinite(z) & (z >= min_range) & (z <= max_range)
    z, u, v = z[ok], u[ok], v[ok]
    pts = np.column_stack([(u - cam.cx) * z / cam.fx, (v - cam.cy) * z / cam.fy, z])
    world = pts @ np.asarray(rotation, float).T + np.asarray(translation, float)
    return (world, z) if return_depth else world


# The obstacle layer's noise allowances for the robot-mode RGB-D depth (sim_bridges.sensor_noise,
# shaped like a RealSense D435's): launch/fetch.launch.yaml sets these with depth_noise:=true, and the
# offline evaluations use the same figures (tests/test_launch_files.py checks they agree).
NOISY_DEPTH_ALLOWANCES = {"floor_noise_per_m2": 0.004,    # the floor threshold: 4 mm at 1 m, 3.6 cm at 3 m
                          "static_noise_per_m2": 0.01}    # 4 sigma of the model: far wall returns fall this short


@dataclass
class ObstacleParams:
    min_obstacle_height: float = 0.03   # m above the floor; lower returns are floor
    floor_noise_per_m2: float = 0.0     # m/m^2: the floor threshold rises by this x depth^2 (noisy sensors)
    max_obstacle_height: float = 1.40   # m; higher returns cannot touch the robot
    max_range: float = 4.0              # m from the camera; farther returns are ignored
    self_filter_radius: float = 0.55    # m around base_link; returns inside are the robot itself
    static_margin: float = 0.08         # m; returns this close to a static-map obstacle are that obstacle
    static_noise_per_m2: float = 0.0    # m per m^2 of depth: the static margin grows by this x depth^2 (noisy sensors)
    clear_margin: float = 0.10          # m; a cell is cleared when the camera sees this much farther
    persistence: float = 60.0           # s; marked cells are forgotten after this (0: never)
    stride: int = 4                     # use every stride-th pixel of the depth image


class ObstacleLayer:
    """Dynamic obstacle cells on the static map's grid."""

    def __init__(self, grid: OccupancyGrid, static_distance: np.ndarray, params: Optional[ObstacleParams] = None):
        self.grid = grid
        self.p = params or ObstacleParams()
        self.static_distance = static_distance
        shape = grid.data.shape
        self.marked = np.zeros(shape, bool)
        self.stamp = np.full(shape, -np.inf)
        self.height = np.zeros(shape)
        self.version = 0  # bumps whenever the set of marked cells changes

    def clear(self) -> None:
        if self.marked.any():
            self.version += 1
        self.marked[:] = False

    def count(self) -> int:
        return int(self.marked.sum())

    def points(self) -> np.ndarray:
        """Centres of the marked cells, (N, 2) map frame."""
        r, c = np.nonzero(self.marked)
        x, y = self.grid.cell_to_world(r, c)
        return np.column_stack([x, y]) if len(r) else np.zeros((0, 2))

    def add_points(self, points: np.ndarray, now: float, robot_xy: Optional[Sequence[float]] = None,
                   filter_height: bool = True, static_margin: Optional[np.ndarray] = None) -> int:
        """Mark the cells of ``points`` ((N, 2) or (N, 3) map frame); returns how many cells were new.
        ``static_margin``: each point's own margin to static obstacles (N,), m (default: the parameter)."""
        pts = np.asarray(points, float)
        if pts.size == 0:
            return 0
        pts = pts.reshape(len(pts), -1)
        margin = np.full(len(pts), self.p.static_margin) if static_margin is None else \
            np.asarray(static_margin, float).reshape(len(pts))
        keep = np.all(np.isfinite(pts), axis=1)
        if pts.shape[1] >= 3 and filter_height:
            keep &= (pts[:, 2] >= self.p.min_obstacle_height) & (pts[:, 2] <= self.p.max_obstacle_height)
        if robot_xy is not None:
            keep &= np.hypot(pts[:, 0] - robot_xy[0], pts[:, 1] - robot_xy[1]) > self.p.self_filter_radius
        pts, margin = pts[keep], margin[keep]
        if not len(pts):
            return 0
        r, c = self.grid.world_to_index(pts[:, 0], pts[:, 1])
        ok = self.grid.contains(r, c)
        r, c, pts, margin = r[ok], c[ok], pts[ok], margin[ok]
        keep = self.static_distance[r, c] > margin
        r, c, pts = r[keep], c[keep], pts[keep]
        if not len(r):
            return 0
        new = int((~self.marked[r, c]).sum())
        self.marked[r, c] = True
        self.stamp[r, c] = now
        self.height[r, c] = pts[:, 2] if pts.shape[1] >= 3 else 0.5 * (
            self.p.min_obstacle_height + self.p.max_obstacle_height)
        if new:
            self.version += 1
        return new

    def expire(self, now: float) -> int:
        if self.p.persistence <= 0:
            return 0
        old = self.marked & (self.stamp < now - self.p.persistence)
        n = int(old.sum())
        if n:
            self.marked[old] = False
            self.version += 1
        return n

    def clear_seen_through(self, depth: np.ndarray, cam: CameraModel, rotation: np.ndarray,
                           translation: Sequence[float]) -> int:
        """Clear marked cells that this depth frame sees through; returns how many."""
        r, c = np.nonzero(self.marked)
        if not len(r):
            return 0
        x, y = self.grid.cell_to_world(r, c)
        world = np.column_stack([x, y, self.height[r, c]])
        R = np.asarray(rotation, float)
        cam_pts = (world - np.asarray(translation, float)) @ R  # R^T (p - t)
        z = cam_pts[:, 2]
        front = z > 0.05
        u = np.full(len(z), -1.0)
        v = np.full(len(z), -1.0)
        u[front] = cam.fx * cam_pts[front, 0] / z[front] + cam.cx
        v[front] = cam.fy * cam_pts[front, 1] / z[front] + cam.cy
        ui, vi = np.rint(u).astype(int), np.rint(v).astype(int)
        d = np.asarray(depth)
        inside = front & (ui >= 0) & (ui < d.shape[1]) & (vi >= 0) & (vi < d.shape[0]) & (z <= self.p.max_range)
        if not inside.any():
            return 0
        seen = np.full(len(z), np.nan)
        seen[inside] = d[vi[inside], ui[inside]]
        through = inside & (~np.isfinite(seen) | (seen > z + self.p.clear_margin))
        n = int(through.sum())
        if n:
            self.marked[r[through], c[through]] = False
            self.version += 1
        return n

    def update_from_depth(self, depth: np.ndarray, cam: CameraModel, rotation: np.ndarray,
                          translation: Sequence[float], robot_xy: Sequence[float], now: float) -> Tuple[int, int]:
        """Clear what this frame sees through, then mark what it hits. Returns (cleared, new)."""
        cleared = self.clear_seen_through(depth, cam, rotation, translation)
        pts, z = depth_to_points(depth, cam, rotation, translation, self.p.stride, 0.1, self.p.max_range,
                                 return_depth=True)
        if self.p.floor_noise_per_m2 > 0.0:
            # A stereo camera's range error grows with depth squared (sigma ~ 0.0025 z^2 for a D435):
            # far floor returns scatter above min_obstacle_height and would become phantom obstacles.
            above = pts[:, 2] >= self.p.min_obstacle_height + self.p.floor_noise_per_m2 * np.square(z)
            pts, z = pts[above], z[above]
        margin = None
        if self.p.static_noise_per_m2 > 0.0:
            # The same noise puts far wall returns short of the wall, outside a fixed static_margin: a
            # line of phantom cells along the wall blocked a staging pose 0.45 m from it (fetch seed 2).
            margin = self.p.static_margin + self.p.static_noise_per_m2 * np.square(z)
        new = self.add_points(pts, now, robot_xy, static_margin=margin)
        self.expire(now)
        return cleared, new
