"""Simulator-agnostic robot descriptions.

A :class:`RobotSpec` says *what* a robot is (URDF, where it stands, which
joints are position-controlled, which optional capabilities it brings);
backends decide *how* to simulate it. Keeping this free of simulator calls is
what lets a second backend (Isaac Sim) reuse the same robots and scenes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Tuple

import numpy as np

from ..contract import Capability, Pose

__all__ = ["ASSET_DIR", "asset_path", "CameraSpec", "DiffDriveParams", "ArmSpec", "RobotSpec"]

#: Directory holding the URDF assets shipped with the package.
ASSET_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets")


def asset_path(name: str) -> str:
    """Absolute path of a shipped asset file."""
    return os.path.join(ASSET_DIR, name)


@dataclass(frozen=True)
class CameraSpec:
    """A pinhole RGB-D camera.

    :param name: camera name exposed by the backend
    :param pose: optical-frame pose relative to ``link`` (or to the world when
        ``link`` is ``None``)
    :param link: name of the robot link carrying the camera, ``None`` = fixed in the world
    :param robot: name of the robot owning ``link``
    :param vfov_rad: vertical field of view
    :param near: near clip plane (m); also the minimum measurable depth
    :param far: far clip plane (m); beyond it depth is NaN
    """

    name: str
    pose: Pose
    link: Optional[str] = None
    robot: Optional[str] = None
    width: int = 320
    height: int = 240
    vfov_rad: float = np.deg2rad(60.0)
    near: float = 0.05
    far: float = 10.0


@dataclass(frozen=True)
class DiffDriveParams:
    """Differential-drive kinematics and actuator limits.

    :param wheel_radius: m
    :param track_width: distance between the wheel contact points (m)
    :param max_wheel_speed: rad/s; commands are scaled down to respect it
    :param wheel_torque: motor torque limit (N m)
    """

    wheel_radius: float = 0.08
    track_width: float = 0.42
    max_wheel_speed: float = 20.0
    wheel_torque: float = 40.0
    left_wheel_joint: str = "left_wheel_joint"
    right_wheel_joint: str = "right_wheel_joint"

    def __post_init__(self) -> None:
        if self.wheel_radius <= 0 or self.track_width <= 0:
            raise ValueError("wheel_radius and track_width must be positive")


@dataclass(frozen=True)
class ArmSpec:
    """Serial arm with a parallel gripper.

    :param joints: arm joints, base to tip
    :param base_link: link whose frame end-effector deltas are expressed in
    :param ee_link: link tracked by IK (the grasp point between the fingers)
    :param ee_down: end-effector orientation (xyzw, in the arm base frame) held by IK
    :param fingers_coupled: the two fingers move as mirror images (one motor through a linkage,
        as the Franka Hand's), enforced by a gear constraint. Uncoupled, each finger is its own
        20 N motor: a held object can slide the finger pair sideways as one piece until a finger
        reaches its limit, and opening then drags the object along instead of letting it go.
    :param finger_friction_anchors: keep the URDF's ``<friction_anchor/>`` on the finger links (PyBullet).
        Off by default: Bullet keeps an anchored contact point, world-space normal and all, for as
        long as its friction stays inside the cone, so a cube held while the robot turned ~180 deg
        kept contacts whose normals now pointed the wrong way; on opening they acted as a wall
        1.2 mm outside the pads and held the fingers shut against the motors (the put-down jam,
        docs/reference/mission.md; in process, sim_bridges/test/test_put_down_jam.py: 4 of 8 half turns with anchors
        jammed, 0 of 8 without).
    """

    joints: Tuple[str, ...]
    base_link: str
    ee_link: str
    finger_joints: Tuple[str, ...]
    finger_open: float
    finger_closed: float
    finger_force: float
    ee_down: Tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    fingers_coupled: bool = True
    finger_friction_anchors: bool = False


@dataclass(frozen=True)
class RobotSpec:
    """Description of one robot in a scene.

    :param urdf_path: URDF file, or ``None`` when ``urdf_text`` is given
    :param urdf_text: generated URDF (parametrised robots); backends write it to a temp file
    :param base_pose: world pose of the root link
    :param fixed_base: weld the root link to the world
    :param position_joints: joints accepting ``set_joint_targets``
    :param passive_joints: joints left free (motors disabled)
    :param initial_positions: joint positions after reset (others 0)
    :param sample_initial_state: optional ``rng -> {joint: (position, velocity)}``
        overriding ``initial_positions`` on reset (e.g. cart-pole perturbation)
    :param cart_joint: prismatic joint driven by ``set_cart_force``
    :param cart_max_force: |force| limit (N)
    :param plate_joints: ``(pitch, roll)`` joints for ``set_plate_angles``
    :param inertia_from_file: use the URDF inertias (False: let the simulator
        derive them from collision shapes, for URDFs with placeholder inertias)
    :param link_objects: ground-truth entries for robot links:
        ``{object_name: (link, shape, color_name, size)}``
    """

    name: str
    base_pose: Pose
    urdf_path: Optional[str] = None
    urdf_text: Optional[str] = None
    fixed_base: bool = True
    inertia_from_file: bool = True
    position_joints: Tuple[str, ...] = ()
    passive_joints: Tuple[str, ...] = ()
    initial_positions: Mapping[str, float] = field(default_factory=dict)
    sample_initial_state: Optional[Callable[[np.random.Generator], Mapping[str, Tuple[float, float]]]] = None
    diff_drive: Optional[DiffDriveParams] = None
    arm: Optional[ArmSpec] = None
    cart_joint: Optional[str] = None
    cart_max_force: float = 100.0
    plate_joints: Optional[Tuple[str, str]] = None
    cameras: Tuple[CameraSpec, ...] = ()
    link_objects: Mapping[str, Tuple[str, str, str, Tuple[float, float, float]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.urdf_path is None) == (self.urdf_text is None):
            raise ValueError(f"robot '{self.name}': give exactly one of urdf_path / urdf_text")

    @property
    def capabilities(self) -> frozenset:
        """Capabilities this robot contributes to a scene."""
        caps = set()
        if self.position_joints:
            caps.add(Capability.JOINT_POSITION_CONTROL)
        if self.diff_drive is not None:
            caps.add(Capability.BASE_VELOCITY)
        if self.arm is not None:
            caps.update({Capability.END_EFFECTOR_DELTA, Capability.GRIPPER})
        if self.cart_joint is not None:
            caps.add(Capability.CART_FORCE)
        if self.plate_joints is not None:
            caps.add(Capability.PLATE_ANGLES)
        if self.cameras:
            caps.add(Capability.CAMERA)
        return frozenset(caps)
