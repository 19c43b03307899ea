"""Differential-drive mobile base with a camera mast (``assets/diff_drive_base.urdf.in``)."""

from __future__ import annotations

import string

from ..contract import Pose
from .spec import CameraSpec, DiffDriveParams, RobotSpec, asset_path

#: Height of the body's top plate above ``base_link`` (arm mount plane), m.
BODY_TOP = 0.125
MAST_X = -0.20


def diff_drive_urdf(
    params: DiffDriveParams,
    robot_name: str = "diff_drive_base",
    extra_links: str = "",
    mast_height: float = 1.0,
    camera_pitch: float = 0.45,
    body_mass: float = 20.0,
) -> str:
    """Fill the base template.

    :param extra_links: URDF elements spliced in before ``</robot>`` (e.g. an arm)
    :param mast_height: camera height above the body top (m)
    :param camera_pitch: downward tilt of the camera (rad)
    """
    r = params.wheel_radius
    body_width = params.track_width - 0.08  # leave room for the 4 cm wide wheels
    body_height = 0.15
    caster_radius = 0.5 * r
    with open(asset_path("diff_drive_base.urdf.in"), "r", encoding="utf-8") as f:
        template = string.Template(f.read())
    return template.substitute(
        robot_name=robot_name,
        body_mass=body_mass,
        body_length=0.50,
        body_width=f"{body_width:.6f}",
        body_height=body_height,
        body_z=f"{BODY_TOP - 0.5 * body_height:.6f}",
        body_top=BODY_TOP,
        wheel_radius=f"{r:.6f}",
        wheel_y=f"{0.5 * params.track_width:.6f}",
        wheel_torque=params.wheel_torque,
        max_wheel_speed=params.max_wheel_speed,
        caster_radius=f"{caster_radius:.6f}",
        caster_x=0.22,
        # casters touch the floor exactly when the wheels do
        caster_z=f"{-(r - caster_radius):.6f}",
        mast_x=MAST_X,
        mast_height=mast_height,
        mast_half=0.5 * mast_height,
        camera_pitch=camera_pitch,
        extra_links=extra_links,
    )


def head_camera(robot_name: str) -> CameraSpec:
    """RGB-D camera on the mast: its optical frame is the URDF link ``camera_optical_frame``."""
    return CameraSpec(name="head_camera", pose=Pose([0.0, 0.0, 0.0]), link="camera_optical_frame",
                      robot=robot_name, near=0.1, far=12.0)


def diff_drive_base(params: DiffDriveParams = DiffDriveParams(), base_pose: Pose = None) -> RobotSpec:
    """A bare differential-drive base with the mast camera."""
    base_pose = base_pose or Pose([0.0, 0.0, params.wheel_radius])
    return RobotSpec(
        name="diff_drive_base",
        urdf_text=diff_drive_urdf(params),
        base_pose=base_pose,
        fixed_base=False,
        diff_drive=params,
        cameras=(head_camera("diff_drive_base"),),
    )
