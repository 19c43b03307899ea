"""``mobile_table``: the mobile manipulator parked in front of a home table, cubes to pick.

The lift task of the fetch mission (``RlStack/MobileLift-v0``): the robot (``base_link``) stands
at the origin facing +x; one table of the ``home`` scene's size (0.8 x 0.6 x 0.5 m, its 0.6 m
side facing the robot) has its near edge ``TABLE_EDGE_X`` ahead of ``base_link``. Two cubes of
the home spec (5 cm, 80 g, friction 0.8): the target ``target_cube`` and a distractor
``green_cube``. The seeded sampler places both on the table top within reach, anywhere in
``CUBE_REGION`` (base_link frame: 0.44 to 0.76 m ahead, +-0.25 m to the side), any yaw.

Why that region: the fetch mission stops the base 0.38-0.46 m from a table edge, up to +-8 deg
off perpendicular, and presents cubes 0.06-0.30 m beyond the edge (|y| <= 0.25 m). Seen from
``base_link`` that is 0.44-0.76 m ahead; the static table here stands for all those stops
(its edge at 0.40 m keeps every sampled cube, any yaw, fully on the top).

``support="floor"``: no table; the cubes lie on the floor in ``FLOOR_REGION`` (0.46-0.68 m ahead,
+-0.20 m to the side), where the fetch parks the base in front of an object on the floor. Why there:
the arm reaches a floor cube's centre (2.5 cm up) with the gripper pointing down from 0.35 to 0.76 m
ahead of ``base_link`` at y = 0 and 0.40 to 0.76 m at y = 0.2 m, but below 0.40 m its hand comes
within 2 cm of the body's front edge (measured with PyBullet's IK: ``docs/reference/mission.md``, "Floor
grasps").

``target_kind="lego"``: the target is the toy brick of ``home_kinds`` (``kinds.KINDS["lego"]``, 5.1 x
5.1 x 3.7 cm, 50 g) instead of the cube, resting on its flat side; the object is still named
``target_cube`` (what the lift tasks and tools read), its ``kind`` says what it is. The fetch serves
one lift for every kind it can grasp, so the lift trains on both (``RlStack/MobileLiftPerceived-v0``'s
``lego_fraction``).
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from ..contract import Pose
from ..geometry import look_at_optical, quat_from_rpy
from ..robots.mobile_manipulator import mobile_manipulator
from ..robots.spec import CameraSpec, DiffDriveParams
from .home import TABLE_SIZE
from .kinds import BASIC, KINDS
from .spec import ObjectSpec, SceneSpec, box_footprint, sample_separated_xy

#: near (-x) edge of the table, m ahead of base_link (the base's front casters end 0.26 m ahead)
TABLE_EDGE_X = 0.40
TABLE_TOP = TABLE_SIZE[2]
CUBE_SIZE = BASIC["cube"].size[0]   # 0.05 m
CUBE_MASS = BASIC["cube"].mass      # 0.08 kg
CUBE_FRICTION = 0.8                     # home's lateral friction
TARGET = "target_cube"
DISTRACTOR = "green_cube"
#: cube centre region (x0, x1, y0, y1) in the world = base_link frame at reset
CUBE_REGION = (0.44, 0.76, -0.25, 0.25)
#: minimum centre distance between the target and the distractor
CUBE_SEPARATION = 0.12
#: world z of a resting cube's centre
CUBE_REST_Z = TABLE_TOP + 0.5 * CUBE_SIZE
#: supports the scene can put the cubes on
SUPPORTS = ("table", "floor")
#: cube centre region on the floor (support="floor"), base_link frame at reset
FLOOR_REGION = (0.46, 0.68, -0.20, 0.20)
#: world z of a cube's centre resting on the floor
FLOOR_REST_Z = 0.5 * CUBE_SIZE
#: kinds the target can be (``target_kind``): the lift's graspable kinds
TARGET_KINDS = ("cube", "lego")


def _cube_sampler(region, rest_z: float, target_rest_z: Optional[float] = None):
    """Seeded placement of the target and the distractor in ``region``; the target's centre at
    ``target_rest_z`` (default ``rest_z``: a cube), the distractor cube's at ``rest_z``."""
    target_z = rest_z if target_rest_z is None else target_rest_z

    def sample(rng: np.random.Generator) -> Mapping[str, Pose]:
        (tx, ty, _), (dx, dy, _) = sample_separated_xy(rng, [region], 2, min_separation=CUBE_SEPARATION)
        yaws = rng.uniform(-np.pi, np.pi, size=2)
        return {
            TARGET: Pose([tx, ty, target_z], quat_from_rpy(0.0, 0.0, float(yaws[0]))),
            DISTRACTOR: Pose([dx, dy, rest_z], quat_from_rpy(0.0, 0.0, float(yaws[1]))),
        }
    return sample


_sample_cubes = _cube_sampler(CUBE_REGION, CUBE_REST_Z)


def _cube(name: str, color: str, position) -> ObjectSpec:
    """A cube of home's spec (5 cm, 80 g, friction 0.8)."""
    return ObjectSpec(name=name, shape="box", size=(CUBE_SIZE,) * 3, color_name=color, mass=CUBE_MASS,
                      lateral_friction=CUBE_FRICTION, pose=Pose(position))


def _target_object(kind: str, support_z: float) -> ObjectSpec:
    """The target: a home cube (red) or another graspable kind (red), resting on ``support_z``."""
    if kind == "cube":
        return _cube(TARGET, "red", [0.55, 0.0, support_z + 0.5 * CUBE_SIZE])
    k = KINDS[kind]
    size = k.extents
    return ObjectSpec(name=TARGET, shape=k.shape, size=size, color_name="red", mass=k.mass, mesh=k.mesh,
                      kind=k.name, lateral_friction=CUBE_FRICTION, pose=Pose([0.55, 0.0, support_z + 0.5 * size[2]]))


def make_mobile_table_scene(wheel_radius: float = 0.08, track_width: float = 0.42,
                            robot_pose: Optional[Pose] = None, arm_visual: str = "low_poly",
                            support: str = "table", target_kind: str = "cube") -> SceneSpec:
    """The mobile manipulator at the origin (facing +x) in front of a home-size table.

    :param wheel_radius: base wheel radius (m); base_link is at this height
    :param track_width: distance between the wheels (m)
    :param robot_pose: start pose of ``base_link`` (default: origin facing +x)
    :param arm_visual: "low_poly" (default) or "detailed" arm meshes (drawing only)
    :param support: "table" (default: cubes on the table top) or "floor" (no table; cubes on the
        floor in ``FLOOR_REGION``)
    :param target_kind: the target's kind, one of ``TARGET_KINDS`` ("cube", default; "lego": the toy
        brick of ``home_kinds``); the distractor is always a green cube
    :raises ValueError: for another ``support`` or ``target_kind``
    """
    if support not in SUPPORTS:
        raise ValueError(f"support must be one of {SUPPORTS}, got {support!r}")
    if target_kind not in TARGET_KINDS:
        raise ValueError(f"target_kind must be one of {TARGET_KINDS}, got {target_kind!r}")
    on_floor = support == "floor"
    rest_z = FLOOR_REST_Z if on_floor else CUBE_REST_Z
    support_z = 0.0 if on_floor else TABLE_TOP
    target = _target_object(target_kind, support_z)
    target_rest_z = float(target.pose.position[2])
    table = ObjectSpec(
        name="table",
        shape="box",
        size=TABLE_SIZE,
        color_name="brown",
        mass=0.0,
        pose=Pose([TABLE_EDGE_X + 0.5 * TABLE_SIZE[0], 0.0, 0.5 * TABLE_TOP]),
    )
    distractor = _cube(DISTRACTOR, "green", [0.55, 0.15, rest_z])
    camera = CameraSpec(
        name="side_camera",
        pose=look_at_optical([0.35, -1.1, 1.15], [0.5, 0.0, TABLE_TOP]),
        near=0.05,
        far=5.0,
    )
    params = DiffDriveParams(wheel_radius=wheel_radius, track_width=track_width)
    robot = mobile_manipulator(params, robot_pose or Pose([0.0, 0.0, wheel_radius]), arm_visual=arm_visual)
    return SceneSpec(
        name="mobile_table",
        robots=(robot,),
        objects=(target, distractor),
        static=() if on_floor else (table,),
        cameras=(camera,),
        occupancy=() if on_floor else (box_footprint(table),),
        sample_object_poses=_cube_sampler(FLOOR_REGION if on_floor else CUBE_REGION, rest_z, target_rest_z),
    )
