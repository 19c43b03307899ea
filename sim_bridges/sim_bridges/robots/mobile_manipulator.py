"""Mobile manipulator: the differential-drive base with a Panda on its top plate."""

from __future__ import annotations

from ..contract import Pose
from .diff_drive import BODY_TOP, diff_drive_urdf, head_camera
from .panda import ARM_JOINTS, FINGER_JOINTS, PANDA_ARM, _initial_positions, panda_urdf_fragment
from .spec import DiffDriveParams, RobotSpec

#: Arm mount position on the base top plate (m, base_link frame).
ARM_MOUNT_X = 0.08
#: Mass of the base body under the arm (kg). The bare base's 20 kg was too light for an 18 kg Panda:
#: with the arm 0.45 m to the side the robot's centre of mass came close to the line from a wheel to
#: the front caster, the other wheel unloaded under each arm step, and the base pivoted on the
#: loaded one (tools/arm_base_shift.py --base-mass 20). Bases that
#: carry a Panda weigh 40-135 kg.
BASE_BODY_MASS = 40.0


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
        urdf_text=diff_drive_urdf(params, robot_name=name, extra_links=extra, mast_height=1.1,
                                body_mass=BASE_BODY_MASS),
        base_pose=base_pose or Pose([0.0, 0.0, params.wheel_radius]),
        fixed_base=False,
        position_joints=ARM_JOINTS + FINGER_JOINTS,
        initial_positions=_initial_positions(),
        diff_drive=params,
        arm=PANDA_ARM,
        cameras=(head_camera(name),),
    )
