"""``home``: an 8 x 6 m room with furniture, household objects and the mobile manipulator.

``home`` holds 12 objects: a cube, a ball and a cylinder in each of four colours. ``home_kinds``
(``make_home_scene(kinds="all")``) holds the same 12, placed exactly as in ``home`` for the same
seed, and one object of every other kind of :mod:`sim_bridges.scenes.kinds` (a duck, a mug, a
teddy, a bowl, ...: 30 objects in all), placed after them on the tables and the floor.
"""

from __future__ import annotations

import itertools
from typing import Mapping, Optional, Tuple

import numpy as np

from ..contract import Pose
from ..geometry import quat_from_rpy
from ..robots.mobile_manipulator import mobile_manipulator
from ..robots.spec import DiffDriveParams
from .kinds import BASIC, BASIC_KINDS, KINDS, Kind
from .spec import ObjectSpec, SceneSpec, box_footprint, sample_separated_xy

ROOM_X = 8.0
ROOM_Y = 6.0
WALL_THICKNESS = 0.10
WALL_HEIGHT = 2.0
TABLE_SIZE = (0.8, 0.6, 0.5)

SHAPES = BASIC_KINDS
OBJECT_COLORS = ("red", "green", "blue", "yellow")

#: Static furniture / obstacles: name -> (centre x, centre y, size x, size y, height, colour).
_FURNITURE = {
    "table_1": (2.6, -2.0) + TABLE_SIZE + ("brown",),
    "table_2": (-2.0, -2.2) + TABLE_SIZE + ("brown",),
    "table_3": (0.8, 2.4) + TABLE_SIZE + ("brown",),
    "pillar": (2.2, 1.6, 0.4, 0.4, WALL_HEIGHT, "grey"),
    "cabinet": (-2.5, 2.7, 1.2, 0.5, 0.9, "white"),
    "crate": (-3.0, -0.8, 0.6, 0.6, 0.6, "beige"),
}

#: Free floor rectangles (x0, x1, y0, y1) for objects: clear of furniture and walls
#: and of the robot's start area (|x| < ~1, |y| < 1 around the origin and the
#: corridor ahead of it), so a freshly reset robot can always drive straight and turn.
_FLOOR_REGIONS = (
    (-3.6, -1.4, 0.0, 2.2),
    (-1.2, 1.6, -2.7, -1.3),
    (3.0, 3.7, -1.2, 1.0),
    (-1.0, 0.2, 1.3, 2.7),
)
_TABLE_MARGIN = 0.08


def _walls() -> Tuple[ObjectSpec, ...]:
    hx, hy, t = ROOM_X / 2, ROOM_Y / 2, WALL_THICKNESS
    z = WALL_HEIGHT / 2
    specs = {
        "wall_north": ((0.0, hy + t / 2), (ROOM_X + 2 * t, t)),
        "wall_south": ((0.0, -hy - t / 2), (ROOM_X + 2 * t, t)),
        "wall_east": ((hx + t / 2, 0.0), (t, ROOM_Y)),
        "wall_west": ((-hx - t / 2, 0.0), (t, ROOM_Y)),
    }
    return tuple(
        ObjectSpec(name, "box", (sx, sy, WALL_HEIGHT), "beige", mass=0.0, pose=Pose([x, y, z]))
        for name, ((x, y), (sx, sy)) in specs.items()
    )


def _furniture() -> Tuple[ObjectSpec, ...]:
    return tuple(
        ObjectSpec(name, "box", (sx, sy, h), color, mass=0.0, pose=Pose([x, y, h / 2]))
        for name, (x, y, sx, sy, h, color) in _FURNITURE.items()
    )


def _object_of(kind: Kind, color: str, x: float, y: float) -> ObjectSpec:
    """An object of ``kind`` in ``color``, parked at (x, y) on the floor until a reset places it."""
    size = kind.extents
    # a little rolling resistance so balls (and whatever rolls) come to rest
    rolling = 0.001 if kind.rolls else 0.0
    return ObjectSpec(name=f"{color}_{kind.name}", shape=kind.shape, size=size, color_name=color, mass=kind.mass,
                      pose=Pose([x, y, size[2] / 2]), mesh=kind.mesh, kind=kind.name, lateral_friction=0.8,
                      rolling_friction=rolling, spinning_friction=rolling)


def _objects() -> Tuple[ObjectSpec, ...]:
    return tuple(_object_of(BASIC[shape], color, -3.5 + 0.2 * i, 1.0)
                 for i, (shape, color) in enumerate(itertools.product(SHAPES, OBJECT_COLORS)))


def _table_regions() -> Tuple[Tuple[float, float, float, float], ...]:
    regions = []
    for name in ("table_1", "table_2", "table_3"):
        x, y, sx, sy, _, _ = _FURNITURE[name]
        m = _TABLE_MARGIN
        regions.append((x - sx / 2 + m, x + sx / 2 - m, y - sy / 2 + m, y + sy / 2 - m))
    return tuple(regions)


def _other_kind_objects(colour_index: int) -> Tuple[ObjectSpec, ...]:
    """One object of every kind beyond the basic three, in its colour ``colour_index`` (mod its colours)."""
    others = [kind for kind in KINDS.values() if kind.name not in BASIC_KINDS]
    return tuple(_object_of(kind, kind.colours[colour_index % len(kind.colours)], -3.5, -2.6 + 0.2 * i)
                 for i, kind in enumerate(others))


def _place_more(rng: np.random.Generator, objects: Tuple[ObjectSpec, ...], placed: list, regions, n_tables: int):
    """Poses for ``objects`` after ``placed`` [(x, y, radius)]: each inside a region shrunk by its own
    half-size (so nothing overhangs a table edge), clear of the others by 6 cm."""
    poses = {}
    for obj in objects:
        radius = 0.5 * float(np.hypot(obj.size[0], obj.size[1]))
        for _ in range(2000):
            region = int(rng.integers(len(regions)))
            x0, x1, y0, y1 = regions[region]
            m = max(0.0, radius - (_TABLE_MARGIN if region < n_tables else 0.0))
            if x1 - x0 <= 2 * m or y1 - y0 <= 2 * m:
                continue
            x, y = float(rng.uniform(x0 + m, x1 - m)), float(rng.uniform(y0 + m, y1 - m))
            if all(np.hypot(x - px, y - py) >= radius + pr + 0.06 for px, py, pr in placed):
                break
        else:
            raise RuntimeError(f"could not place '{obj.name}' clear of the other objects")
        placed.append((x, y, radius))
        floor_z = TABLE_SIZE[2] if region < n_tables else 0.0
        poses[obj.name] = Pose([x, y, floor_z + obj.size[2] / 2 + 0.001],
                               quat_from_rpy(0.0, 0.0, float(rng.uniform(-np.pi, np.pi))))
    return poses


def _make_sampler(objects: Tuple[ObjectSpec, ...], more: Tuple[ObjectSpec, ...] = ()):
    regions = _table_regions() + _FLOOR_REGIONS
    n_tables = len(_table_regions())

    def sample(rng: np.random.Generator) -> Mapping[str, Pose]:
        points = sample_separated_xy(rng, regions, len(objects), min_separation=0.15)
        yaws = rng.uniform(-np.pi, np.pi, size=len(objects))
        poses = {}
        for obj, (x, y, region), yaw in zip(objects, points, yaws):
            floor_z = TABLE_SIZE[2] if region < n_tables else 0.0
            poses[obj.name] = Pose([x, y, floor_z + obj.size[2] / 2], quat_from_rpy(0.0, 0.0, yaw))
        if more:   # the basic objects' draws come first, so they land where they do in plain `home`
            placed = [(x, y, 0.5 * float(np.hypot(o.size[0], o.size[1]))) for o, (x, y, _) in zip(objects, points)]
            poses.update(_place_more(rng, more, placed, regions, n_tables))
        return poses

    return sample


def make_home_scene(
    wheel_radius: float = 0.08,
    track_width: float = 0.42,
    robot_pose: Optional[Pose] = None,
    arm_visual: str = "low_poly",
    kinds: str = "basic",
    kind_colour: int = 0,
) -> SceneSpec:
    """The home scene.

    :param wheel_radius: base wheel radius (m)
    :param track_width: distance between the wheels (m)
    :param robot_pose: start pose of ``base_link`` (default: room centre facing +x)
    :param arm_visual: "low_poly" (default: the arm's collision meshes, so the head
        camera renders fast enough for 20 Hz in real time) or "detailed"
    :param kinds: "basic" (12 objects: cube, ball, cylinder x 4 colours) or "all" (also one object of
        every other kind in ``scenes.kinds``; the scene ``home_kinds``)
    :param kind_colour: which of its colours each other kind takes (index, modulo its colours; renders
        for training perception vary it)
    """
    if kinds not in ("basic", "all"):
        raise ValueError(f"kinds must be 'basic' or 'all', got {kinds!r}")
    params = DiffDriveParams(wheel_radius=wheel_radius, track_width=track_width)
    static = _walls() + _furniture()
    objects = _objects()
    more = _other_kind_objects(kind_colour) if kinds == "all" else ()
    robot = mobile_manipulator(params, robot_pose or Pose([0.0, 0.0, wheel_radius]), arm_visual=arm_visual)
    return SceneSpec(
        name="home" if kinds == "basic" else "home_kinds",
        robots=(robot,),
        objects=objects + more,
        static=static,
        occupancy=tuple(box_footprint(s) for s in static),
        sample_object_poses=_make_sampler(objects, more),
    )
