"""Franka Emika Panda arm with its parallel gripper (``pybullet_data/franka_panda``)."""

from __future__ import annotations

import os
import re

from ..contract import Pose
from .spec import ArmSpec, RobotSpec

ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
FINGER_JOINTS = ("panda_finger_joint1", "panda_finger_joint2")
#: "Ready" configuration used by franka_ros / panda-gym: gripper above the table, pointing down.
READY_POSE = (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785)
FINGER_OPEN = 0.04

PANDA_ARM = ArmSpec(
    joints=ARM_JOINTS,
    base_link="panda_link0",
    ee_link="panda_grasptarget",
    finger_joints=FINGER_JOINTS,
    finger_open=FINGER_OPEN,
    finger_closed=0.0,
    finger_force=20.0,
)


def panda_urdf_path() -> str:
    """Path of the Panda URDF shipped in the ``pybullet_data`` package (no download)."""
    import pybullet_data  # data-only package bundled with the pybullet wheel

    return os.path.join(pybullet_data.getDataPath(), "franka_panda", "panda.urdf")


def _initial_positions() -> dict:
    init = dict(zip(ARM_JOINTS, READY_POSE))
    init.update({j: FINGER_OPEN for j in FINGER_JOINTS})
    return init


def panda(base_pose: Pose) -> RobotSpec:
    """Fixed-base Panda (e.g. bolted to a table) at ``base_pose``."""
    return RobotSpec(
        name="panda",
        urdf_path=panda_urdf_path(),
        base_pose=base_pose,
        fixed_base=True,
        # panda.urdf carries placeholder inertias (0.1 everywhere); the shape-derived
        # ones are what panda-gym and the PyBullet examples use.
        inertia_from_file=False,
        position_joints=ARM_JOINTS + FINGER_JOINTS,
        initial_positions=_initial_positions(),
        arm=PANDA_ARM,
    )


#: Which meshes draw the arm in camera images (``arm_visual`` scene option).
ARM_VISUALS = ("detailed", "low_poly")


def panda_urdf_fragment(arm_visual: str = "detailed") -> str:
    """The Panda's ``<link>``/``<joint>`` elements with absolute mesh paths.

    Used to splice the arm into another URDF (mobile manipulator) so the
    whole robot is one articulation: a single multibody is cheaper and far
    stiffer than two bodies held together by a constraint.

    ``arm_visual="low_poly"`` draws the arm with its collision meshes (the same
    shapes, simplified: 0.4 MB of meshes instead of 9 MB). Why: the CPU renderer
    rasterises every triangle, and the detailed arm in front of a mobile robot's
    head camera costs about a third of each frame (measured in ``home``:
    96 ms -> 60 ms per 320x240 frame on a loaded 2-core machine). Physics is the
    same either way: collisions always use the collision meshes.
    """
    if arm_visual not in ARM_VISUALS:
        raise ValueError(f"arm_visual must be one of {ARM_VISUALS}, got {arm_visual!r}")
    path = panda_urdf_path()
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"<robot[^>]*>(.*)</robot>", text, re.S)
    if body is None:  # pragma: no cover - the shipped file is well-formed
        raise RuntimeError(f"cannot parse {path}")
    mesh_dir = os.path.dirname(path).replace("\\", "/")
    fragment = body.group(1)
    if arm_visual == "low_poly":
        fragment = fragment.replace("package://meshes/visual/", "package://meshes/collision/")
    return fragment.replace("package://meshes/", mesh_dir + "/meshes/")
