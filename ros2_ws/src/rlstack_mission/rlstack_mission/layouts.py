"""Seeded fetch layouts for the home scene: which cube to fetch and where it lies (pure, no rclpy).

A layout is the home scene's own seeded placement of all twelve objects (four colours x cube,
ball, cylinder: the distractors, other colours and other shapes alike), with the *target* cube
then moved to a seeded spot on one of the three tables that the robot can reach: some side of
the table is free for its footprint and the spot is within the arm's reach of that edge (the
mission's own :func:`rlstack_mission.fetch.plan_approaches` decides, on the static map with the
objects that lie on the floor marked as obstacles: :func:`with_floor_objects`). Other
objects are kept at least ``MIN_SEPARATION`` away. Objects of the seeded placement that lie on
a table stay where they are (distractors on tables, possibly right next to the target).

Why move the target: in the plain home placement most cubes lie on the floor or at a table's
wall side, out of reach; the table layouts keep the evaluation comparable with the runs before
floor grasps existed (docs/reference/mission.md).

``support="floor"``: the target is moved to a seeded spot on the open floor instead, at least
``FLOOR_WALL_CLEARANCE`` from furniture and walls, where the mission's own
:func:`rlstack_mission.fetch.plan_floor_approaches` finds a free place to stand.

``kind``: what is fetched, "cube" by default. Another kind of ``sim_bridges.scenes.kinds`` (the
scene ``home_kinds`` holds one object of each, e.g. ``red_lego``) takes the colour that scene gives
it, and the query names the kind ("the red lego").
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence, Tuple

import numpy as np

from sim_bridges import make_scene
from sim_bridges.scenes.home import TABLE_SIZE as HOME_TABLE_SIZE
from sim_bridges.scenes.kinds import BASIC_KINDS

from .fetch import FetchParams, clearance, plan_approaches, plan_floor_approaches

COLORS = ("red", "green", "blue", "yellow")
#: (centre x, centre y, size x, size y) of the home tables, read from the scene itself
TABLES = {o.name: (float(o.pose.position[0]), float(o.pose.position[1]), float(o.size[0]), float(o.size[1]))
          for o in make_scene("home").static if o.name.startswith("table_")}
TABLE_TOP = HOME_TABLE_SIZE[2]
TABLE_MARGIN = 0.07
MIN_SEPARATION = 0.12
#: the arm's comfortable reach from the table edge (the lift policy was trained up to 0.30 m)
MAX_EDGE_DISTANCE = 0.28
#: a floor target lies at least this far from walls and furniture (the hand reaches down in front of the base)
FLOOR_WALL_CLEARANCE = 0.15
#: an object on the floor blocks the robot like furniture within this radius of its centre (half the
#: footprint of the larger kinds; the smaller ones get a margin)
FLOOR_OBJECT_RADIUS = 0.06
SUPPORTS = ("table", "floor")
#: drop-off points (x, y, yaw): open floor near the robot's start
DROPOFFS = ((-0.6, 0.0, math.pi), (0.0, -0.8, -math.pi / 2), (0.4, 0.6, math.pi / 2))
#: where the robot starts (map frame, m): every staging pose of a layout is driven to from here
START = (0.0, 0.0)


@dataclass(frozen=True)
class FetchLayout:
    seed: int
    target: str                                  # object name, e.g. "yellow_cube"
    query: str                                   # what the user asks for, e.g. "the yellow cube"
    table: str                                   # the table it lies on, or "floor"
    target_pose: Tuple[float, float, float, float]   # x, y, z, yaw (root frame)
    dropoff: Tuple[float, float, float]          # x, y, yaw (map frame)

    def quaternion(self) -> Tuple[float, float, float, float]:
        yaw = self.target_pose[3]
        return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


def make_layout(seed: int, others: Mapping[str, Sequence[float]], occupied: np.ndarray, resolution: float,
                origin: Tuple[float, float], params: FetchParams = FetchParams(), robot_radius: float = 0.5,
                target_color: str = "", support: str = "table", kind: str = "cube") -> FetchLayout:
    """The layout of ``seed``. ``others``: every object's seeded position (x, y, z), from the scene's
    ground truth after ``reset(seed)``; ``occupied``: the static map's occupied mask (row = y);
    ``support``: put the target on a table (default) or on the floor; ``kind``: what to fetch, in a
    colour of the ``{colour}_{kind}`` objects among ``others``."""
    if support not in SUPPORTS:
        raise ValueError(f"support must be one of {SUPPORTS}, got {support!r}")
    rng = np.random.default_rng(10_000 + int(seed))
    # home's cubes, balls and cylinders come in all four colours; another kind in those the scene
    # holds (home_kinds: one lego brick, a red one)
    colours = list(COLORS) if kind in BASIC_KINDS else [c for c in COLORS if f"{c}_{kind}" in others] or list(COLORS)
    color = target_color or colours[int(seed) % len(colours)]
    target = f"{color}_{kind}"
    half = object_height(target) / 2
    if support == "floor":
        return _floor_layout(seed, rng, color, target, others, occupied, resolution, origin, params, robot_radius,
                             kind, half)
    reach = FetchParams(**{**params.__dict__, "max_edge_distance": MAX_EDGE_DISTANCE})
    # the robot must be able to stand at the table: objects lying on the floor block it as furniture does
    blocked = with_floor_objects(occupied, resolution, origin, {n: p for n, p in others.items() if n != target})
    # ... and must get there: a staging pose in a corner that floor objects close off (a ball in the
    # 1.1 m gap between a table and the wall) cannot be driven to, however free it is itself
    # (one cell of margin: navigation measures clearance on its own grid, and refused a pose that this
    # check found 0.50 m clear as "0.49 m from an obstacle")
    reachable = reachable_cells(blocked, resolution, origin, START, robot_radius + resolution)
    tables = list(TABLES)
    for _ in range(2000):
        table = tables[int(rng.integers(len(tables)))]
        cx, cy, sx, sy = TABLES[table]
        x = float(rng.uniform(cx - sx / 2 + TABLE_MARGIN, cx + sx / 2 - TABLE_MARGIN))
        y = float(rng.uniform(cy - sy / 2 + TABLE_MARGIN, cy + sy / 2 - TABLE_MARGIN))
        clear = all(math.hypot(x - p[0], y - p[1]) >= MIN_SEPARATION for n, p in others.items() if n != target)
        if not clear or not any(_in(reachable, resolution, origin, c.staging.x, c.staging.y)
                                for a in plan_approaches(blocked, resolution, origin, x, y, reach, robot_radius)
                                for c in (a, *a.alternates)):
            continue
        yaw = float(rng.uniform(-math.pi, math.pi))
        dropoff = DROPOFFS[int(rng.integers(len(DROPOFFS)))]
        return FetchLayout(int(seed), target, f"the {color} {kind}", table, (x, y, TABLE_TOP + half, yaw), dropoff)
    raise RuntimeError(f"seed {seed}: found no reachable free spot on any table for {target}")


def reachable_cells(blocked: np.ndarray, resolution: float, origin: Tuple[float, float],
                    start: Tuple[float, float], robot_radius: float) -> np.ndarray:
    """Cells the centre of a robot of ``robot_radius`` reaches from ``start`` without coming closer
    than its radius to a ``blocked`` cell (flood fill over the free cells, 4-connected)."""
    h, w = blocked.shape
    r = int(math.ceil(robot_radius / resolution))
    grown = np.zeros_like(blocked, dtype=bool)
    padded = np.pad(blocked, r, constant_values=True)   # outside the map counts as blocked
    for dr in range(-r, r + 1):
        for dc in range(-r, r + 1):
            if (dr * resolution) ** 2 + (dc * resolution) ** 2 <= robot_radius ** 2:
                grown |= padded[r + dr:r + dr + h, r + dc:r + dc + w]
    free = ~grown
    reach = np.zeros_like(free)
    row = int(math.floor((start[1] - origin[1]) / resolution))
    col = int(math.floor((start[0] - origin[0]) / resolution))
    if not (0 <= row < h and 0 <= col < w) or not free[row, col]:
        return reach
    reach[row, col] = True
    while True:
        grow = reach.copy()
        grow[1:, :] |= reach[:-1, :]
        grow[:-1, :] |= reach[1:, :]
        grow[:, 1:] |= reach[:, :-1]
        grow[:, :-1] |= reach[:, 1:]
        grow &= free
        if np.array_equal(grow, reach):
            return reach
        reach = grow


def _in(cells: np.ndarray, resolution: float, origin: Tuple[float, float], x: float, y: float) -> bool:
    row = int(math.floor((y - origin[1]) / resolution))
    col = int(math.floor((x - origin[0]) / resolution))
    return 0 <= row < cells.shape[0] and 0 <= col < cells.shape[1] and bool(cells[row, col])


def with_floor_objects(occupied: np.ndarray, resolution: float, origin: Tuple[float, float],
                       objects: Mapping[str, Sequence[float]], radius: float = FLOOR_OBJECT_RADIUS) -> np.ndarray:
    """``occupied`` with a disc of ``radius`` marked around every object that lies on the floor (its
    centre below half the table height). Why: the robot's sensors see such an object as an obstacle
    and will not stand within its radius of it; before this, a table side that the static map showed
    free could be blocked by toys on the floor (`home_kinds` holds 30 objects), and the fetch ended
    UNREACHABLE in a layout that promised a reachable target (docs/reference/mission.md)."""
    out = occupied.copy()
    h, w = out.shape
    rows, cols = np.mgrid[0:h, 0:w]
    cx = origin[0] + (cols + 0.5) * resolution
    cy = origin[1] + (rows + 0.5) * resolution
    for x, y, z in (tuple(p[:3]) for p in objects.values()):
        if z < TABLE_TOP / 2:
            out |= (cx - x) ** 2 + (cy - y) ** 2 <= radius ** 2
    return out


def _floor_layout(seed, rng, color, target, others, occupied, resolution, origin, params, robot_radius,
                  kind, half) -> FetchLayout:
    h, w = occupied.shape
    x0, y0 = origin
    for _ in range(2000):
        x = float(rng.uniform(x0, x0 + w * resolution))
        y = float(rng.uniform(y0, y0 + h * resolution))
        if not clearance(occupied, resolution, origin, x, y, FLOOR_WALL_CLEARANCE):
            continue
        clear = all(math.hypot(x - p[0], y - p[1]) >= MIN_SEPARATION for n, p in others.items() if n != target)
        if not clear or not plan_floor_approaches(occupied, resolution, origin, x, y, params, robot_radius):
            continue
        yaw = float(rng.uniform(-math.pi, math.pi))
        dropoff = DROPOFFS[int(rng.integers(len(DROPOFFS)))]
        if math.hypot(x - dropoff[0], y - dropoff[1]) < 0.8 or math.hypot(x, y) < 0.8:
            continue   # not already at the drop-off, nor under the robot (it starts at the map's origin)
        return FetchLayout(int(seed), target, f"the {color} {kind}", "floor", (x, y, half, yaw), dropoff)
    raise RuntimeError(f"seed {seed}: found no free spot on the floor for {target}")


@functools.lru_cache(maxsize=None)
def _heights() -> Mapping[str, float]:
    return {o.name: float(o.size[2]) for o in make_scene("home_kinds").objects}


def object_height(name: str) -> float:
    """Height of the home scenes' object ``name`` (``home_kinds`` holds ``home``'s objects too), m."""
    if name not in _heights():
        raise ValueError(f"no object {name!r} in the home scenes (kinds other than cube, ball and cylinder "
                         "come in one or two colours: sim_bridges/README.md, 'Mesh objects and kinds')")
    return _heights()[name]


def layout_from_ground_truth(seed: int, ground_truth: Mapping[str, object], occupied: np.ndarray,
                             resolution: float, origin: Tuple[float, float], **kwargs) -> FetchLayout:
    """:func:`make_layout` from a ``sim_bridges`` ground-truth mapping (name -> ObjectState)."""
    others = {n: tuple(float(v) for v in s.pose.position) for n, s in ground_truth.items()}
    return make_layout(seed, others, occupied, resolution, origin, **kwargs)
