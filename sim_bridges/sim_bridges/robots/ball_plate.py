"""Ball-on-plate rig: 2-DOF tilting plate (``assets/ball_plate.urdf``)."""

from __future__ import annotations

from ..contract import Pose
from .spec import RobotSpec, asset_path

PITCH_JOINT = "plate_pitch"
ROLL_JOINT = "plate_roll"
#: Height of the plate pivot (and of the plate's top surface when level), m.
PLATE_HEIGHT = 0.30
PLATE_SIZE = 0.30
#: Tilt limit of both joints (rad), as in the URDF.
TILT_LIMIT = 0.25
#: The ball lives in the scene (it is not part of the rig): see ``scenes/ball_plate.py``.
BALL_URDF = asset_path("ping_pong_ball.urdf")
BALL_DIAMETER = 0.040
BALL_MASS = 0.0027


def ball_plate_rig() -> RobotSpec:
    """The tilting plate; ``set_plate_angles`` / ``set_joint_targets`` drive it."""
    return RobotSpec(
        name="ball_plate",
        urdf_path=asset_path("ball_plate.urdf"),
        base_pose=Pose([0.0, 0.0, 0.0]),
        fixed_base=True,
        position_joints=(PITCH_JOINT, ROLL_JOINT),
        plate_joints=(PITCH_JOINT, ROLL_JOINT),
        link_objects={"plate": ("plate", "box", "white", (PLATE_SIZE, PLATE_SIZE, 0.01))},
    )
