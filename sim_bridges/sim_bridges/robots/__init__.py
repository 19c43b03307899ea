"""Robot descriptions, independent of any simulator and of the scenes using them."""

from .ball_plate import ball_plate_rig
from .cartpole import cartpole
from .diff_drive import diff_drive_base, diff_drive_urdf
from .mobile_manipulator import mobile_manipulator
from .panda import panda
from .spec import ArmSpec, CameraSpec, DiffDriveParams, RobotSpec, asset_path

__all__ = [
    "ArmSpec",
    "CameraSpec",
    "DiffDriveParams",
    "RobotSpec",
    "asset_path",
    "ball_plate_rig",
    "cartpole",
    "diff_drive_base",
    "diff_drive_urdf",
    "mobile_manipulator",
    "panda",
]
