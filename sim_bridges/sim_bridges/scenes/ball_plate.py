"""``ball_plate``: a ping-pong ball on the tilting plate."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..contract import Pose
from ..geometry import look_at_optical
from ..robots.ball_plate import BALL_DIAMETER, BALL_MASS, BALL_URDF, PLATE_HEIGHT, ball_plate_rig
from ..robots.spec import CameraSpec
from .spec import ObjectSpec, SceneSpec

#: Half-width of the square where the ball starts (m); well inside the 0.15 m edge.
START_HALF_WIDTH = 0.08


def _sample_ball(rng: np.random.Generator) -> Mapping[str, Pose]:
    x, y = rng.uniform(-START_HALF_WIDTH, START_HALF_WIDTH, size=2)
    # resting on the level plate: the top surface passes through the pivot
    return {"ball": Pose([x, y, PLATE_HEIGHT + 0.5 * BALL_DIAMETER])}


def make_ball_plate_scene() -> SceneSpec:
    """Rig, ball (random start on the plate) and an oblique overhead camera."""
    ball = ObjectSpec(
        name="ball",
        shape="sphere",
        size=(BALL_DIAMETER,) * 3,
        color_name="orange",
        mass=BALL_MASS,
        pose=Pose([0.0, 0.0, PLATE_HEIGHT + 0.5 * BALL_DIAMETER]),
        urdf_path=BALL_URDF,  # carries the hollow-sphere inertia and contact parameters
    )
    camera = CameraSpec(
        name="overhead_camera",
        pose=look_at_optical([-0.35, 0.0, 0.9], [0.0, 0.0, PLATE_HEIGHT]),
        near=0.05,
        far=3.0,
    )
    return SceneSpec(
        name="ball_plate",
        robots=(ball_plate_rig(),),
        objects=(ball,),
        cameras=(camera,),
        sample_object_poses=_sample_ball,
    )
