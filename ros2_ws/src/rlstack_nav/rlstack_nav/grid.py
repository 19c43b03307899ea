"""Occupancy grid, distance field and inflation (pure numpy, no rclpy).

Conventions follow ``nav_msgs/OccupancyGrid``:

* ``data[row, col]`` with row 0 at the map origin (lowest y) and col 0 at the lowest x, i.e. the
  same row-major order as ``OccupancyGrid.data`` (a PGM file stores the *top* row first; see
  :mod:`rlstack_nav.map_io`).
* values: ``-1`` unknown, ``0`` free, ``100`` occupied (intermediate values are probabilities).
* ``origin = (x, y, yaw)``: pose of the lower-left corner of cell (0, 0) in the map frame;
  ``resolution`` in metres per cell.

:class:`Costmap` turns a grid into what the planner and controller need: the Euclidean distance
from every cell centre to the nearest obstacle (metres, exact up to a cap), a lethal mask (closer
than the robot radius, or unknown when unknown is not allowed) and a per-metre traversal cost that
rises near obstacles (Nav2's inflation layer, as a multiplier on distance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence, Tuple

import numpy as np

FREE = 0
OCCUPIED = 100
UNKNOWN = -1


@dataclass
class OccupancyGrid:
    """A 2-D occupancy grid in the map frame (see module docstring for the conventions)."""

    data: np.ndarray
    resolution: float
    origin: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    frame_id: str = "map"

    def __post_init__(self) -> None:
        self.data = np.asarray(self.data, dtype=np.int8)
        if self.data.ndim != 2 or self.data.size == 0:
            raise ValueError(f"occupancy data must be a non-empty 2-D array, got shape {self.data.shape}")
        if not (math.isfinite(self.resolution) and self.resolution > 0):
            raise ValueError(f"resolution must be a positive number of metres, got {self.resolution}")
        ox, oy, oyaw = (float(v) for v in self.origin)
        if not all(math.isfinite(v) for v in (ox, oy, oyaw)):
            raise ValueError(f"origin must be finite, got {self.origin}")
        self.origin = (ox, oy, oyaw)
        self._c, self._s = math.cos(oyaw), math.sin(oyaw)

    # ------------------------------------------------------------------ geometry
    @property
    def height(self) -> int:
        return int(self.data.shape[0])

    @property
    def width(self) -> int:
        return int(self.data.shape[1])

    def world_to_cell(self, x, y):
        """Map-frame metres -> (row, col) (float arrays/values; floor them for indices)."""
        dx, dy = np.asarray(x, float) - self.origin[0], np.asarray(y, float) - self.origin[1]
        u = (self._c * dx + self._s * dy) / self.resolution
        v = (-self._s * dx + self._c * dy) / self.resolution
        return v, u

    def world_to_index(self, x, y):
        """Map-frame metres -> integer (row, col); may lie outside the grid (check :meth:`contains`)."""
        r, c = self.world_to_cell(x, y)
        return np.floor(r).astype(np.int64), np.floor(c).astype(np.int64)

    def cell_to_world(self, row, col):
        """(row, col) -> map-frame metres of the cell centre."""
        u = (np.asarray(col, float) + 0.5) * self.resolution
        v = (np.asarray(row, float) + 0.5) * self.resolution
        return self.origin[0] + self._c * u - self._s * v, self.origin[1] + self._s * u + self._c * v

    def contains(self, row, col):
        row, col = np.asarray(row), np.asarray(col)
        return (row >= 0) & (row < self.height) & (col >= 0) & (col < self.width)

    def contains_point(self, x: float, y: float) -> bool:
        r, c = self.world_to_index(x, y)
        return bool(self.contains(r, c))

    def copy(self) -> "OccupancyGrid":
        return OccupancyGrid(self.data.copy(), self.resolution, self.origin, self.frame_id)

    def occupied_mask(self, threshold: int = 65) -> np.ndarray:
        return self.data >= threshold

    def unknown_mask(self) -> np.ndarray:
        return self.data < 0

    @classmethod
    def empty(cls, width_m: float, height_m: float, resolution: float,
              origin: Tuple[float, float, float] = (0.0, 0.0, 0.0), value: int = FREE) -> "OccupancyGrid":
        w = int(round(width_m / resolution))
        h = int(round(height_m / resolution))
        return cls(np.full((h, w), value, np.int8), resolution, origin)

    def fill_box(self, x_min: float, x_max: float, y_min: float, y_max: float, value: int = OCCUPIED) -> None:
        """Mark every cell that overlaps the axis-aligned box (map frame, yaw-0 origin only)."""
        if self.origin[2] != 0.0:
            raise ValueError("fill_box needs a map whose origin yaw is 0")
        res, (ox, oy, _) = self.resolution, self.origin
        eps = 1e-9
        c0 = max(0, int(math.floor((x_min - ox) / res + eps)))
        c1 = min(self.width, int(math.ceil((x_max - ox) / res - eps)))
        r0 = max(0, int(math.floor((y_min - oy) / res + eps)))
        r1 = min(self.height, int(math.ceil((y_max - oy) / res - eps)))
        if c1 > c0 and r1 > r0:
            self.data[r0:r1, c0:c1] = value


def _shift(a: np.ndarray, dr: int, dc: int, fill) -> np.ndarray:
    """``out[r, c] = a[r + dr, c + dc]`` (``fill`` outside)."""
    out = np.full_like(a, fill)
    h, w = a.shape
    rs, re = max(0, -dr), min(h, h - dr)
    cs, ce = max(0, -dc), min(w, w - dc)
    if re > rs and ce > cs:
        out[rs:re, cs:ce] = a[rs + dr:re + dr, cs + dc:ce + dc]
    return out


def distance_field(obstacles: np.ndarray, resolution: float, max_distance: float) -> np.ndarray:
    """Exact Euclidean distance (metres) from each cell centre to the nearest obstacle cell centre,
    capped at ``max_distance`` (cells farther away read ``max_distance``).

    Separable truncated transform: a column pass finds the vertical distance to the nearest
    obstacle within ``k = ceil(max_distance / resolution)`` cells, a row pass minimises
    ``g(c')^2 + (c - c')^2`` over ``|c - c'| <= k``. O(k * cells) numpy work, no scipy.
    """
    obstacles = np.asarray(obstacles, bool)
    k = int(math.ceil(max_distance / resolution)) + 1
    big = np.float64(k + 1) ** 2
    # column pass: g2[r, c] = (rows to the nearest obstacle in column c)^2, or big
    g2 = np.where(obstacles, 0.0, big)
    for d in range(1, k + 1):
        d2 = float(d * d)
        for sign in (-1, 1):
            hit = _shift(obstacles, sign * d, 0, False)
            np.minimum(g2, np.where(hit, d2, big), out=g2)
    d2 = g2.copy()
    for d in range(1, k + 1):
        for sign in (-1, 1):
            np.minimum(d2, _shift(g2, 0, sign * d, big) + float(d * d), out=d2)
    dist = np.sqrt(d2) * resolution
    return np.minimum(dist, max_distance)


@dataclass
class CostParams:
    """Inflation of the occupancy grid for a circular robot.

    :param robot_radius: circumscribed radius of the robot about ``base_link`` (m); cells whose
        centre is closer than this to an obstacle are lethal (the robot's centre may not enter)
    :param inflation_radius: distance from obstacles (m) within which traversal costs more
    :param cost_scaling_factor: exponential decay rate of that cost with distance (1/m)
    :param cost_weight: extra cost per metre right at ``robot_radius`` (dimensionless; 0 = none):
        a metre driven there counts as ``1 + cost_weight`` metres
    :param occupied_threshold: grid value (0-100) at and above which a cell is an obstacle
    :param allow_unknown: plan through unknown (-1) cells; otherwise they are obstacles
    """

    robot_radius: float = 0.50
    inflation_radius: float = 1.0
    cost_scaling_factor: float = 5.0
    cost_weight: float = 2.0
    occupied_threshold: int = 65
    allow_unknown: bool = False


@dataclass
class Costmap:
    """Static grid + extra obstacle cells -> distance field, lethal mask and traversal cost."""

    grid: OccupancyGrid
    params: CostParams = field(default_factory=CostParams)
    extra_obstacles: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        p = self.params
        if p.robot_radius < 0 or p.inflation_radius < p.robot_radius:
            raise ValueError("need 0 <= robot_radius <= inflation_radius")
        occ = self.grid.occupied_mask(p.occupied_threshold)
        if not p.allow_unknown:
            occ = occ | self.grid.unknown_mask()
        if self.extra_obstacles is not None:
            occ = occ | np.asarray(self.extra_obstacles, bool)
        self.obstacles = occ
        cap = max(p.inflation_radius, p.robot_radius) + self.grid.resolution
        self.distance = distance_field(occ, self.grid.resolution, cap)
        self.lethal = occ | (self.distance < p.robot_radius)
        excess = np.clip(self.distance - p.robot_radius, 0.0, None)
        cost = p.cost_weight * np.exp(-p.cost_scaling_factor * excess)
        cost[self.distance >= p.inflation_radius] = 0.0
        #: traversal cost per metre (>= 1), inf where lethal
        self.cost = np.where(self.lethal, np.inf, 1.0 + cost)

    @property
    def resolution(self) -> float:
        return self.grid.resolution

    def distance_at(self, x: float, y: float) -> float:
        """Distance (m) from the map point to the nearest obstacle; 0 outside the map."""
        r, c = self.grid.world_to_index(x, y)
        if not self.grid.contains(r, c):
            return 0.0
        return float(self.distance[r, c])

    def is_lethal(self, x: float, y: float) -> bool:
        r, c = self.grid.world_to_index(x, y)
        return (not bool(self.grid.contains(r, c))) or bool(self.lethal[r, c])

    def is_occupied(self, x: float, y: float) -> bool:
        r, c = self.grid.world_to_index(x, y)
        return (not bool(self.grid.contains(r, c))) or bool(self.obstacles[r, c])


def points_to_mask(grid: OccupancyGrid, points_xy: Iterable[Sequence[float]]) -> np.ndarray:
    """Boolean mask of the cells containing the given map-frame points (outside points dropped)."""
    mask = np.zeros(grid.data.shape, bool)
    pts = np.asarray(list(points_xy) if not isinstance(points_xy, np.ndarray) else points_xy, float)
    if pts.size == 0:
        return mask
    pts = pts.reshape(-1, 2)
    r, c = grid.world_to_index(pts[:, 0], pts[:, 1])
    ok = grid.contains(r, c)
    mask[r[ok], c[ok]] = True
    return mask
