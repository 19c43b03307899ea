"""Mobile manipulator: the differential-drive base with a Panda on its top plate."""

from __future__ import annotations

from ..contract import Pose
from .diff_drive import BODY_TOP, diff_drive_urdf, head_camera
from .panda import ARM_JOINTS, FINGER_JOINTS, PANDA_ARM, _initial_positions, panda_urdf_fragment
from .spec import DiffDriveParams, RobotSpec

#: Arm mount position on the base top plate (m, base_link frame).
ARM_MOUNT_X = 0.08


def mobile_manipulator(params: DiffDriveParams = DiffDriveParams(), base_pose: Pose = None,
                       arm_visual: str = "detailed") -> RobotSpec:
    """Base + Panda as one articulation (the arm's root is welded to ``base_link``).

    ``arm_visual``: "detailed" or "low_poly" meshes for camera images (see
    :func:`panda_urdf_fragment`); physics is identical.
    """
    extra = panda_urdf_fragment(arm_visual) + (
        '\n  <joint name="arm_mount_joint" type="fixed">\n'
        '    <parent link="base_link"/>\n    <child link="panda_link0"/>\n'
        f'    <origin xyz="{ARM_MOUNT_X} 0 {BODY_TOP}"/>\n  </joint>\n'
    )
    name = "mobile_manipulator"
    return RobotSpec(
        name=name,
        urdf_text=diff_drive_urdf(params, robot_name=name, extra_links=extra, mast_height=1.1),
        base_pose=base_pose or Pose([0.0, 0.0, params.wheel_radius]),
        fixed_base=False,
        position_joints=ARM_JOINTS + FINGER_JOINTS,
        initial_positions=_initial_positions(),
        diff_drive=params,
        arm=PANDA_ARM,
        cameras=(head_camera(name),),
    )
