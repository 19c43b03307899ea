"""``panda_table``: a Panda bolted to a table with three 5 cm cubes to pick."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..contract import Pose
from ..geometry import look_at_optical, quat_from_rpy
from ..robots.panda import panda
from ..robots.spec import CameraSpec
from .spec import ObjectSpec, SceneSpec, box_footprint, sample_separated_xy

TABLE_SIZE = (1.2, 0.9, 0.40)
TABLE_TOP = TABLE_SIZE[2]
CUBE_SIZE = 0.05
CUBE_COLORS = ("red", "green", "yellow")
#: Where cubes may start (x0, x1, y0, y1): in front of the arm, inside its reach.
CUBE_REGION = (-0.05, 0.25, -0.25, 0.25)
ROBOT_X = -0.45


def _sample_cubes(rng: np.random.Generator) -> Mapping[str, Pose]:
    xy = sample_separated_xy(rng, [CUBE_REGION], len(CUBE_COLORS), min_separation=0.09)
    yaws = rng.uniform(-np.pi / 4, np.pi / 4, size=len(CUBE_COLORS))
    return {
        f"{c}_cube": Pose([x, y, TABLE_TOP + 0.5 * CUBE_SIZE], quat_from_rpy(0.0, 0.0, yaw))
        for c, (x, y, _), yaw in zip(CUBE_COLORS, xy, yaws)
    }


def make_panda_table_scene() -> SceneSpec:
    """Table (1.2 x 0.9 m, top at 0.40 m), Panda at its -x edge, cubes in front, front camera."""
    table = ObjectSpec(
        name="table",
        shape="box",
        size=TABLE_SIZE,
        color_name="brown",
        mass=0.0,
        pose=Pose([0.0, 0.0, 0.5 * TABLE_TOP]),
    )
    cubes = tuple(
        ObjectSpec(
            name=f"{c}_cube",
            shape="box",
            size=(CUBE_SIZE,) * 3,
            color_name=c,
            mass=0.05,
            lateral_friction=1.0,
            pose=Pose([0.1 * i, 0.0, TABLE_TOP + 0.5 * CUBE_SIZE]),
        )
        for i, c in enumerate(CUBE_COLORS)
    )
    camera = CameraSpec(
        name="front_camera",
        pose=look_at_optical([0.75, 0.0, 1.05], [0.05, 0.0, TABLE_TOP]),
        near=0.05,
        far=4.0,
    )
    return SceneSpec(
        name="panda_table",
        robots=(panda(Pose([ROBOT_X, 0.0, TABLE_TOP])),),
        objects=cubes,
        static=(table,),
        cameras=(camera,),
        occupancy=(box_footprint(table),),
        sample_object_poses=_sample_cubes,
    )
