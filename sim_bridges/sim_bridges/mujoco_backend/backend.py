"""MuJoCo 3.x implementation of :class:`sim_bridges.contract.SimBackend`.

Worlds are built from the same :class:`~sim_bridges.scenes.spec.SceneSpec` /
:class:`~sim_bridges.robots.spec.RobotSpec` as the PyBullet backend: MuJoCo
compiles each robot's URDF (``MjSpec.from_string``, visuals kept, static links
not fused so every URDF link stays a body), and this module adds what a URDF
cannot say through the ``MjSpec`` editing API: actuators (cart force motor,
position servos), free objects, the floor, cameras and lights.

Scenes built here: :data:`MUJOCO_SCENES`. Any other scene name raises a
``ValueError`` naming what this backend has and that the PyBullet backend has
them all.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

# Headless offscreen rendering: EGL (Mesa's software llvmpipe works on CPU-only machines). Must be
# chosen before mujoco (and PyOpenGL) are imported; an explicit MUJOCO_GL from the caller wins.
os.environ.setdefault("MUJOCO_GL", "egl")
if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from ..backend_base import BackendBase, check_dynamics_scale  # noqa: E402
from ..backend_scenes import PARTIAL_BACKEND_SCENES  # noqa: E402
from ..contract import (  # noqa: E402
    CameraFrame,
    CameraIntrinsics,
    Capability,
    JointLimit,
    JointState,
    Lighting,
    LinkTransform,
    NotSupported,
    ObjectState,
    OccupancyBox,
    Odometry,
    Pose,
    Twist,
    physics_steps_per_ee_step,
)
from ..geometry import diff_drive_wheel_speeds, matrix_to_quat, quat_multiply, quat_to_matrix  # noqa: E402
from ..robots.spec import CameraSpec, RobotSpec  # noqa: E402
from ..scenes import make_scene, scene_names  # noqa: E402
from ..scenes.kinds import single_object_obj  # noqa: E402
from ..scenes.meshes import mesh_placement  # noqa: E402
from ..scenes.spec import ObjectSpec, SceneSpec  # noqa: E402
from ..spawning import check_delete, check_spawn, spawn_templates, spawned_spec  # noqa: E402

__all__ = ["MUJOCO_SCENES", "MuJoCoBackend", "renderer_status"]

#: Scenes this backend builds (the PyBullet backend builds every registered scene).
MUJOCO_SCENES: Tuple[str, ...] = PARTIAL_BACKEND_SCENES["mujoco"]

#: Position servos: natural frequency (rad/s) and damping ratio of the joint PD loop, tuned
#: against the joint's own inertia at build time (PyBullet's motors are near-rigid constraints).
_SERVO_OMEGA = 60.0
_SERVO_ZETA = 1.0
#: Arm joint servos (PD on the joint's inertia at the ready pose, as above), identified against
#: PyBullet's position motors on a 0.1 rad step of panda_joint1 (fraction done after 50/100/150 ms:
#: PyBullet 0.69/0.91/0.98, these 0.64/0.90/0.98, both without overshoot). At 60 rad/s critically
#: damped (the plate's servo) the arm overshot by 6 % (joint) and 11-17 % (a 1.5 cm end-effector
#: step): torque saturation and the coupled joints cut the damping.
_ARM_SERVO_OMEGA = 80.0
_ARM_SERVO_ZETA = 2.0
#: Arm IK (damped least squares): iterations, stop at this 6-D error, damping, null-space gain.
_IK_ITERATIONS = 50
_IK_TOLERANCE = 1e-4
_IK_DAMPING = 0.01
_IK_NULLSPACE_GAIN = 0.1
_IK_MAX_STEP = 0.1
#: As in the PyBullet backend: turning the Panda's last joint by +a turns the downward gripper by
#: -a about the arm base's z; a wrist turn runs at this speed (rad/s).
_WRIST_SIGN = -1.0
_WRIST_TURN_SPEED = 2.0
#: Wheel velocity servos: torque per rad/s of wheel speed error (N m s).
_WHEEL_KV = 80.0
#: Wheel armature (kg m^2): a geared wheel motor's reflected rotor inertia. Without it the light
#: wheel (0.0026 kg m^2) under the stiff servo chattered on MuJoCo's soft contact when a turn in
#: place started: a wheel left the floor, spun up to 64 rad/s, and the base slid 14 cm and turned
#: 0.3 rad the wrong way in the first second (home, 0.5 rad/s command). With it, no chatter.
_WHEEL_ARMATURE = 0.05
#: Finger servos: full force this far (m) from the target; the finger joints' armature (kg)
#: keeps that stiffness stable at 240 Hz (natural frequency ~120 rad/s with the finger's mass).
_FINGER_FULL_FORCE_ERROR = 0.005
_FINGER_ARMATURE = 0.3
#: Friction: elliptic cones with frictional constraints 3x harder than normal ones (``impratio``),
#: MuJoCo's advice for grasping. With its defaults (pyramidal cones, impratio 1) carried cubes left
#: the closed hand under the base's turns and stops (``tools/probes/stow_rate_check.py --carry``, seeds
#: 700-705 and 800-809: 6 of 14 lifted cubes held through every manoeuvre; the fetch graph lost the
#: cube on the way to the drop-off in seeds 2 and 11); with these 13 of 14 (the other one lost in
#: the stow). impratio 10 held 12 of 14 but the fixed-base lift fell from 94 to 86 of 100
#: (``rlstack_learning.transfer``); with 3 it is 97 of 100 (docs/reference/training.md).
_FRICTION_CONE = mujoco.mjtCone.mjCONE_ELLIPTIC
_IMPRATIO = 3.0
#: Finger pad contacts: reference damping ``b`` (1/s) and stiffness ``k`` (1/s^2) of MuJoCo's
#: contact constraint (``solref`` in its direct form ``(-k, -b)``) in units of the timestep ``h``:
#: ``b = _FINGER_CONTACT_BH / h``, ``k = _FINGER_CONTACT_KH2 / h**2``. Why: a friction row's reference
#: acceleration is ``-b * slip speed`` and MuJoCo's constraint accelerations leave out the
#: velocity-product terms (``dJ/dt qdot``), so an object held while the robot turns, or while the
#: arm swings, slides in the hand at about (centripetal acceleration) / ``b``: the friction it needs is
#: far inside the cone, and impratio 10 or the noslip solver did not change it. With MuJoCo's default
#: ``solref`` (0.02 s, ``b`` ~ 105 /s) a cube held at the carry pose slid outwards along the pads at
#: 7.2 mm/s while the base turned in place at 1.5 rad/s, 10 mm during the stow, and left the hand
#: in the next half turn (``tools/probes/carry_grip.py``: 16 of 16 grasps; the fetch graph lost 3 of
#: 23 cubes, each while turning in place); the 20 N fingers also sank 1.4-2.4 mm into the cube.
#: With these (at 240 Hz ``b`` 288 /s, ``k`` 2.0e4 /s^2) it slides 1.2 mm/s in that turn, 2-4 mm in
#: the stow, 0 of 16 grasps fell (``tools/probes/stow_rate_check.py --carry``, seeds 700-719 and
#: 800-819: 38 of 38 lifted cubes held through every manoeuvre, 32 of 38 before), and the pads
#: sink 0.3-0.5 mm (PyBullet: 0.1 mm). The discrete
#: contact is stable while ``h b + h^2 k / 2 < 2`` (here 1.4; at 2.1 the grasp blew apart), hence
#: the scaling with ``h``: the margin holds at any physics rate (at 120 Hz it slides 2.2 mm/s).
_FINGER_CONTACT_BH = 1.2
_FINGER_CONTACT_KH2 = 0.35
# Optical frame (z forward, y down) -> MuJoCo/OpenGL camera frame (looks down -z, y up): rotate
# pi about x. As a quaternion (xyzw): (1, 0, 0, 0).
_OPTICAL_TO_GL = np.array([1.0, 0.0, 0.0, 0.0])


def _wxyz(q_xyzw: Sequence[float]) -> List[float]:
    x, y, z, w = (float(v) for v in q_xyzw)
    return [w, x, y, z]


def _xyzw(q_wxyz: Sequence[float]) -> np.ndarray:
    w, x, y, z = (float(v) for v in q_wxyz)
    return np.array([x, y, z, w])


_RENDERER_STATUS: Optional[Tuple[bool, str]] = None


def renderer_status() -> Tuple[bool, str]:
    """``(works, reason)`` of MuJoCo's offscreen renderer in this process (probed once).

    Creates a tiny model and a 4x4 :class:`mujoco.Renderer` under the configured ``MUJOCO_GL``.
    """
    global _RENDERER_STATUS
    if _RENDERER_STATUS is None:
        backend = os.environ.get("MUJOCO_GL", "")
        try:
            model = mujoco.MjModel.from_xml_string("<mujoco><worldbody/></mujoco>")
            renderer = mujoco.Renderer(model, 4, 4)
            renderer.close()
            _RENDERER_STATUS = (True, f"MuJoCo offscreen renderer (MUJOCO_GL={backend})")
        except Exception as exc:  # no GL in this process: the camera capability is dropped
            _RENDERER_STATUS = (False, f"no MuJoCo offscreen GL context (MUJOCO_GL={backend}): "
                                       f"{type(exc).__name__}: {str(exc)[:200]}; install Mesa EGL "
                                       "(libegl1, libgl1-mesa-dri) or OSMesa and set MUJOCO_GL=egl|osmesa")
    return _RENDERER_STATUS


@dataclass
class _Joint:
    name: str
    jid: int
    qadr: int
    dadr: int
    lower: float
    upper: float
    max_velocity: float
    effort: float
    actuator: Optional[int] = None  # position servo / force motor driving it


@dataclass
class _Object:
    spec: ObjectSpec
    bid: int
    qadr: int
    dadr: int


def _urdf_info(text: str) -> Tuple[Dict[str, Tuple[float, float]], Dict[str, Dict[str, float]]]:
    """``(joint -> (max_velocity, effort), link -> contact params)`` read from the URDF text."""
    root = ET.fromstring(text)
    joints: Dict[str, Tuple[float, float]] = {}
    for j in root.iter("joint"):
        lim = j.find("limit")
        vel = float(lim.get("velocity", "inf")) if lim is not None else math.inf
        eff = float(lim.get("effort", "inf")) if lim is not None else math.inf
        joints[j.get("name")] = (vel, eff)
    contacts: Dict[str, Dict[str, float]] = {}
    for link in root.iter("link"):
        c = link.find("contact")
        if c is not None:
            contacts[link.get("name")] = {ch.tag: float(ch.get("value")) for ch in c if ch.get("value") is not None}
    return joints, contacts


def _inertia_from_collision_boxes(model: Any, bodies: Sequence[int]) -> None:
    """Each body's inertia = a solid box with the body's mass filling its collision geoms' bounding
    box in the inertial frame: what PyBullet derives when a URDF's inertias are placeholders
    (``RobotSpec.inertia_from_file=False``; Bullet's convex shapes use their bounding box). The
    mass and centre of mass stay the URDF's."""
    for b in bodies:
        mass = float(model.body_mass[b])
        if mass <= 0:
            continue
        pts = []
        r_i = np.zeros(9)
        mujoco.mju_quat2Mat(r_i, model.body_iquat[b])
        r_i = r_i.reshape(3, 3)
        for g in range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b]):
            if not (model.geom_contype[g] or model.geom_conaffinity[g]):
                continue
            r_g = np.zeros(9)
            mujoco.mju_quat2Mat(r_g, model.geom_quat[g])
            r_g = r_g.reshape(3, 3)
            if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH:
                mid = model.geom_dataid[g]
                v = model.mesh_vert[model.mesh_vertadr[mid]:model.mesh_vertadr[mid] + model.mesh_vertnum[mid]]
            else:  # the geom's own local bounding box corners
                c, h = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
                v = c + h * (2 * np.array(list(np.ndindex(2, 2, 2))) - 1)
            in_body = v @ r_g.T + model.geom_pos[g]
            pts.append((in_body - model.body_ipos[b]) @ r_i)
        if not pts:
            continue
        pts = np.concatenate(pts)
        ex, ey, ez = pts.max(axis=0) - pts.min(axis=0)
        model.body_inertia[b] = [mass / 12 * (ey ** 2 + ez ** 2), mass / 12 * (ex ** 2 + ez ** 2),
                                 mass / 12 * (ex ** 2 + ey ** 2)]


def _urdf_root(text: str) -> str:
    """The URDF's root link (the one that is no joint's child)."""
    root = ET.fromstring(text)
    children = {j.find("child").get("link") for j in root.iter("joint")}
    return next(link.get("name") for link in root.iter("link") if link.get("name") not in children)


def _urdf_subtree(text: str, link: str) -> List[str]:
    """``link`` and every URDF link below it."""
    children: Dict[str, List[str]] = {}
    for j in ET.fromstring(text).iter("joint"):
        children.setdefault(j.find("parent").get("link"), []).append(j.find("child").get("link"))
    out, todo = [], [link]
    while todo:
        name = todo.pop()
        out.append(name)
        todo.extend(children.get(name, []))
    return out


def _with_mujoco_compiler(text: str, urdf_dir: Optional[str] = None) -> str:
    """Ask MuJoCo's URDF compiler to keep visuals and every link as its own body.

    ``package://`` mesh paths (the Panda's) are resolved against ``urdf_dir``, as PyBullet does.
    """
    if urdf_dir is not None:
        text = text.replace("package://", urdf_dir.rstrip("/") + "/")
    root = ET.fromstring(text)
    for old in root.findall("mujoco"):
        root.remove(old)
    mj = ET.SubElement(root, "mujoco")
    ET.SubElement(mj, "compiler", discardvisual="false", fusestatic="false", strippath="false",
                  balanceinertia="true")
    return ET.tostring(root, encoding="unicode")


class MuJoCoBackend(BackendBase):
    """MuJoCo 3.x simulation behind the backend contract (headless).

    :param physics_rate_hz: fixed integration rate (``opt.timestep = 1 / rate``)
    :param control_rate_hz: rate of :meth:`step`; must divide ``physics_rate_hz``
    :param gui: not supported (raises ``ValueError`` when true); MuJoCo's viewer needs a display
    :param integrator: MuJoCo integrator name (``implicitfast`` default: servo damping implicit)

    Example::

        with MuJoCoBackend() as sim:
            sim.load_scene("cartpole")
            sim.set_cart_force(5.0)
            sim.step(10)
    """

    def __init__(self, physics_rate_hz: float = 240.0, control_rate_hz: float = 60.0, gui: bool = False,
                 integrator: str = "implicitfast") -> None:
        if gui:
            raise ValueError("the mujoco backend has no GUI here (headless only); run with gui:=false")
        integrators = {"euler": mujoco.mjtIntegrator.mjINT_EULER, "rk4": mujoco.mjtIntegrator.mjINT_RK4,
                       "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
                       "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST}
        if integrator not in integrators:
            raise ValueError(f"integrator must be one of {sorted(integrators)}, got {integrator!r}")
        self._integrator = integrators[integrator]
        self._init_rates(physics_rate_hz, control_rate_hz)
        self._closed = False
        self._loaded_spec: Optional[SceneSpec] = None
        self._clear_scene()

    def _clear_scene(self) -> None:
        self._spec: Optional[SceneSpec] = None
        self._caps: frozenset = frozenset()
        self.model: Optional[Any] = None
        self.data: Optional[Any] = None
        self._robots: List[Tuple[RobotSpec, Dict[str, _Joint], Dict[str, int]]] = []
        self._joints: Dict[str, _Joint] = {}
        self._joint_names: Tuple[str, ...] = ()
        self._position_joints: Dict[str, _Joint] = {}
        self._objects: Dict[str, _Object] = {}
        self._cameras: Dict[str, Tuple[CameraSpec, int]] = {}
        self._renderers: Dict[Tuple[int, int], Any] = {}
        self._camera_reason = ""
        self._cart: Optional[Tuple[RobotSpec, _Joint]] = None
        self._plate: Optional[RobotSpec] = None
        self._arm: Optional[Tuple[RobotSpec, Dict[str, _Joint], Dict[str, int]]] = None
        self._mobile: Optional[Tuple[RobotSpec, _Joint, _Joint, int]] = None   # spec, wheels, base body
        self._ik_data: Optional[Any] = None
        self._ee_yaw = 0.0   # latched wrist yaw (set_end_effector_yaw); 0 after a reset
        # end-effector step being interpolated: (actuators, start, goal, n, k)
        self._arm_ramp: Optional[List[Any]] = None
        self._ee_step_physics_steps: Optional[int] = None   # set_end_effector_step_period (None: a control period)
        # wrist turn at a bounded speed: (actuator, goal)
        self._wrist_turn: Optional[Tuple[int, float]] = None
        self._physics_steps = 0
        self._dirty = False
        # dynamics groups (name -> MuJoCo bodies) and the nominal masses / sliding frictions,
        # read on the first dynamics call of a compiled model
        self._dynamics_groups: Optional[Dict[str, List[int]]] = None
        self._mass0: Optional[np.ndarray] = None
        self._friction0: Optional[np.ndarray] = None
        self._const_data: Optional[Any] = None   # scratch data for mj_setConst
        self._qadr = np.zeros(0, dtype=np.int64)
        self._dadr = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ scene
    def load_scene(self, name: str, **options: Any) -> None:
        """Build scene ``name`` and reset it with ``seed`` (option, default 0).

        :raises ValueError: unknown scene (listing all), a scene this backend does not build
            (listing :data:`MUJOCO_SCENES`), or bad options
        """
        self._check_open()
        seed = options.pop("seed", 0)
        if name in scene_names() and name not in MUJOCO_SCENES:
            raise ValueError(
                f"scene '{name}' is not built on the mujoco backend (mujoco scenes: {', '.join(MUJOCO_SCENES)}); "
                f"use backend 'pybullet' for it (it builds all of: {', '.join(scene_names())})")
        try:
            spec = make_scene(name, **options)
        except TypeError as exc:
            raise ValueError(f"bad options for scene '{name}': {exc}") from None
        self._build_world(spec)
        self._loaded_spec = spec   # reset restores it after spawn_object / delete_object
        self.reset(seed)

    def _build_world(self, spec: SceneSpec) -> None:
        self._close_renderers()
        self._clear_scene()
        if len(spec.robots) != 1:
            raise ValueError(f"mujoco backend: scene '{spec.name}' has {len(spec.robots)} robots; one is supported")
        robot = spec.robots[0]
        text = robot.urdf_text if robot.urdf_text is not None else open(robot.urdf_path, encoding="utf-8").read()
        urdf_joints, urdf_contacts = _urdf_info(text)
        urdf_dir = os.path.dirname(robot.urdf_path) if robot.urdf_path is not None else None
        ms = mujoco.MjSpec.from_string(_with_mujoco_compiler(text, urdf_dir))
        ms.option.timestep = 1.0 / self._physics_rate_hz
        ms.option.integrator = self._integrator
        ms.option.cone = _FRICTION_CONE
        ms.option.impratio = _IMPRATIO
        ms.option.gravity = [0.0, 0.0, -spec.gravity]
        ms.visual.headlight.ambient = [0.4, 0.4, 0.4]
        ms.visual.headlight.diffuse = [0.6, 0.6, 0.6]
        # a ceiling light (directional, straight down, no shadows) besides the camera headlight:
        # top faces seen at a slant were ~20 % darker than in PyBullet's renderer without it
        ms.worldbody.add_light(name="ceiling", type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL, castshadow=False,
                               pos=[0, 0, 5], dir=[0, 0, -1], diffuse=[0.3, 0.3, 0.3], specular=[0, 0, 0])
        if robot.arm is not None:
            # an arm's joint controller compensates gravity (as Franka's does; PyBullet's
            # position motors are near-rigid constraints that hold the arm up by themselves)
            for name in _urdf_subtree(text, robot.arm.base_link):
                ms.body(name).gravcomp = 1.0
            # the gripper's drive reflects its motor inertia onto the fingers: a stiff finger
            # servo (full force 5 mm off target, as PyBullet's motors push a blocked finger
            # with their force limit) is then stable at the physics rate
            for name in robot.arm.finger_joints:
                ms.joint(name).armature = _FINGER_ARMATURE
        root = ms.worldbody.first_body()
        root.pos = list(robot.base_pose.position)
        root.quat = _wxyz(robot.base_pose.orientation)
        if not robot.fixed_base:
            root.add_freejoint(name=f"{robot.name}_base_free")
        # URDF contact blocks (PyBullet extension) -> geom friction on that link's collision geoms
        for body in ms.bodies:
            c = urdf_contacts.get(body.name)
            if c:
                for geom in body.geoms:
                    if geom.contype or geom.conaffinity:
                        # unset spinning/rolling friction: 0 as in Bullet (MuJoCo combines by max,
                        # so the ball's own values then apply)
                        geom.friction = [c.get("lateral_friction", 1.0), c.get("spinning_friction", 0.0),
                                         c.get("rolling_friction", 0.0)]
                        # a contact has the larger condim of its two geoms: torsional friction
                        # (4) / rolling friction (6) only act where a geom asks for them
                        if geom.friction[2] > 0:
                            geom.condim = 6
                        elif geom.friction[1] > 0:
                            geom.condim = 4
                        elif geom.friction[0] == 0:
                            # frictionless (the base's casters): MuJoCo takes the larger friction
                            # of a geom pair, so this geom's must win (priority) and be frictionless
                            geom.condim = 1
                            geom.priority = 1
        # URDF visuals come with group 1 collisions off; MuJoCo compiles URDF collision geoms as
        # contype/conaffinity 1 and visuals as 0/0, which is what the scene needs.
        if spec.ground_plane:
            ms.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1],
                                  rgba=[0.8, 0.8, 0.8, 1])
        for obj in spec.static:
            self._add_static(ms, obj)
        for obj in spec.objects:
            self._add_object(ms, obj)
        # actuators
        if robot.cart_joint is not None:
            ms.add_actuator(name="cart_force", target=robot.cart_joint,
                            trntype=mujoco.mjtTrn.mjTRN_JOINT, ctrllimited=mujoco.mjtLimited.mjLIMITED_TRUE,
                            ctrlrange=[-robot.cart_max_force, robot.cart_max_force], gear=[1, 0, 0, 0, 0, 0])
        if robot.diff_drive is not None:
            dd = robot.diff_drive
            for jname in (dd.left_wheel_joint, dd.right_wheel_joint):
                ms.joint(jname).armature = _WHEEL_ARMATURE
                # a stiff velocity servo (damping implicit in implicitfast), torque-limited as
                # PyBullet's velocity motor: full torque 0.5 rad/s off the commanded wheel speed
                ms.add_actuator(name=f"wheel_{jname}", target=jname, trntype=mujoco.mjtTrn.mjTRN_JOINT,
                                gaintype=mujoco.mjtGain.mjGAIN_FIXED, biastype=mujoco.mjtBias.mjBIAS_AFFINE,
                                gainprm=[_WHEEL_KV] + [0] * 9, biasprm=[0, 0, -_WHEEL_KV] + [0] * 7,
                                forcelimited=mujoco.mjtLimited.mjLIMITED_TRUE,
                                forcerange=[-dd.wheel_torque, dd.wheel_torque])
        for jname in robot.position_joints:
            effort = urdf_joints.get(jname, (math.inf, math.inf))[1]
            act = ms.add_actuator(name=f"servo_{jname}", target=jname, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            # kp/kv are set after compiling, from the joint's effective inertia
            act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
            act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
            if math.isfinite(effort):
                act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                act.forcerange = [-effort, effort]
        for cam in spec.all_cameras:
            self._add_camera(ms, cam)
        with warnings.catch_warnings():   # the Panda's visual .obj files lack some texture coordinates
            warnings.filterwarnings("ignore", message=".*texture coordinate.*")
            model = ms.compile()
        data = mujoco.MjData(model)
        self.model, self.data = model, data
        self._spec = spec
        # joints of the robot (objects' free joints excluded)
        links: Dict[str, int] = {}
        robot_bodies = set()
        for b in range(1, model.nbody):
            bname = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b)
            if bname not in self._objects_spec_names(spec):
                links[bname] = b
                robot_bodies.add(b)
        joints: Dict[str, _Joint] = {}
        for j in range(model.njnt):
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                continue
            jname = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if model.jnt_limited[j]:
                lower, upper = (float(v) for v in model.jnt_range[j])
            else:
                lower, upper = -math.inf, math.inf
            vel, eff = urdf_joints.get(jname, (math.inf, math.inf))
            joints[jname] = _Joint(jname, j, int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j]),
                                   lower, upper, vel, eff)
        for a in range(model.nu):
            jname = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, int(model.actuator_trnid[a, 0]))
            joints[jname].actuator = a
        for name in robot.position_joints + robot.passive_joints:
            if name not in joints:
                raise ValueError(f"robot '{robot.name}': no movable joint '{name}'")
        if not robot.inertia_from_file:
            _inertia_from_collision_boxes(model, [links[n] for n in links])
            mujoco.mj_setConst(model, data)
        if robot.arm is not None and robot.arm.fingers_coupled is False:
            model.eq_active0[:] = 0   # the URDF's <mimic> fingers compile to one joint equality
            data.eq_active[:] = 0
        # servo gains from the effective inertia at the initial pose (M diagonal + armature)
        mujoco.mj_forward(model, data)
        mass = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, mass)  # MuJoCo >= 3.3 signature (m, d, dst)
        fingers = set(robot.arm.finger_joints) if robot.arm is not None else set()
        for jname in robot.position_joints:
            jt = joints[jname]
            inertia = float(mass[jt.dadr, jt.dadr])
            if jname in fingers:
                kp = robot.arm.finger_force / _FINGER_FULL_FORCE_ERROR
                kv = 2.0 * _SERVO_ZETA * math.sqrt(kp * inertia)
            else:
                omega, zeta = ((_ARM_SERVO_OMEGA, _ARM_SERVO_ZETA) if robot.arm is not None
                               else (_SERVO_OMEGA, _SERVO_ZETA))
                kp = inertia * omega ** 2
                kv = 2.0 * zeta * inertia * omega
            model.actuator_gainprm[jt.actuator, 0] = kp
            model.actuator_biasprm[jt.actuator, :3] = [0.0, -kp, -kv]
        self._robots = [(robot, joints, links)]
        self._joints = joints
        self._joint_names = tuple(joints)
        self._qadr = np.array([j.qadr for j in joints.values()], dtype=np.int64)
        self._dadr = np.array([j.dadr for j in joints.values()], dtype=np.int64)
        self._position_joints = {n: joints[n] for n in robot.position_joints}
        if robot.cart_joint is not None:
            self._cart = (robot, joints[robot.cart_joint])
        if robot.diff_drive is not None:
            dd = robot.diff_drive
            self._mobile = (robot, joints[dd.left_wheel_joint], joints[dd.right_wheel_joint],
                            links[_urdf_root(text)])
        if robot.plate_joints is not None:
            self._plate = robot
        if robot.arm is not None:
            self._arm = (robot, joints, links)
            self._ik_data = mujoco.MjData(model)
            self._set_finger_pad_solref()
        caps = set(spec.capabilities)
        if Capability.CAMERA in caps:
            ok, reason = renderer_status()
            if not ok:
                caps.discard(Capability.CAMERA)
                self._camera_reason = reason
        self._caps = frozenset(caps)
        self._resolve_ids()

    @staticmethod
    def _objects_spec_names(spec: SceneSpec) -> set:
        return {o.name for o in spec.objects} | {f"static_{o.name}" for o in spec.static}

    def _add_static(self, ms: Any, obj: ObjectSpec) -> None:
        body = ms.worldbody.add_body(name=f"static_{obj.name}", pos=list(obj.pose.position),
                                     quat=_wxyz(obj.pose.orientation))
        self._add_shape(ms, body, obj)

    def _add_shape(self, ms: Any, body: Any, obj: ObjectSpec, friction: Optional[List[float]] = None) -> Any:
        """The object's colliding geom (a primitive, or a mesh's collision hull), with its friction."""
        if obj.shape == "mesh":
            geom = self._add_mesh_geoms(ms, body, obj)
        else:
            geom = self._add_primitive_geom(body, obj)
        geom.friction = friction or [obj.lateral_friction, max(obj.spinning_friction, 0.0),
                                     max(obj.rolling_friction, 0.0)]
        return geom

    def _add_primitive_geom(self, body: Any, obj: ObjectSpec) -> Any:
        sx, sy, sz = obj.size
        if obj.shape == "box":
            kind, size = mujoco.mjtGeom.mjGEOM_BOX, [sx / 2, sy / 2, sz / 2]
        elif obj.shape == "sphere":
            kind, size = mujoco.mjtGeom.mjGEOM_SPHERE, [sx / 2, 0, 0]
        else:
            kind, size = mujoco.mjtGeom.mjGEOM_CYLINDER, [sx / 2, sz / 2, 0]
        return body.add_geom(name=obj.name, type=kind, size=size, rgba=list(obj.rgba))

    def _add_mesh_geoms(self, ms: Any, body: Any, obj: ObjectSpec) -> Any:
        """A mesh object: the visual mesh drawn only, the collision mesh's convex hull colliding, both
        placed so the bounding box is centred on the body's origin (``scenes.meshes``, as in PyBullet).
        MuJoCo re-centres a mesh on its own centroid when compiling and moves the geom to match, so
        the geom pose given here is where the file's origin goes."""
        place = mesh_placement(obj.mesh)
        scale = [obj.mesh.scale] * 3
        quat = _wxyz(place.orientation)
        visual_name, collision_name = f"{obj.name}_visual", f"{obj.name}_collision"
        ms.add_mesh(name=visual_name, file=single_object_obj(obj.mesh.path), scale=scale)
        ms.add_mesh(name=collision_name, file=single_object_obj(obj.mesh.collision_file), scale=scale)
        body.add_geom(name=visual_name, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=visual_name,
                      pos=list(place.offset), quat=quat, rgba=list(obj.rgba), contype=0, conaffinity=0,
                      group=1, density=0.0)
        return body.add_geom(name=obj.name, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=collision_name,
                             pos=list(place.offset), quat=quat, rgba=[0, 0, 0, 0], group=3)

    def _add_object(self, ms: Any, obj: ObjectSpec) -> None:
        body = ms.worldbody.add_body(name=obj.name, pos=list(obj.pose.position), quat=_wxyz(obj.pose.orientation))
        body.add_freejoint(name=f"{obj.name}_free")
        mass, inertia, friction, restitution = obj.mass, None, None, obj.restitution
        if obj.urdf_path is not None:  # carries the inertia and contact parameters (e.g. the ping-pong ball)
            root = ET.parse(obj.urdf_path).getroot()
            inert = root.find("link/inertial")
            if inert is not None:
                mass = float(inert.find("mass").get("value"))
                i = inert.find("inertia")
                inertia = [float(i.get(k)) for k in ("ixx", "iyy", "izz")]
            c = root.find("link/contact")
            if c is not None:
                vals = {ch.tag: float(ch.get("value")) for ch in c if ch.get("value") is not None}
                friction = [vals.get("lateral_friction", 1.0), vals.get("spinning_friction", 0.005),
                            vals.get("rolling_friction", 1e-4)]
                restitution = vals.get("restitution", restitution)
        geom = self._add_shape(ms, body, obj, friction)
        if geom.friction[1] > 0 or geom.friction[2] > 0:
            geom.condim = 6  # torsional + rolling friction (home's balls and cylinders, the ping-pong ball)
        # MuJoCo has no restitution coefficient: contacts keep MuJoCo's default (critically damped)
        # softness, so a dropped ball does not bounce as in Bullet (the tasks never drop it)
        if inertia is not None:
            body.explicitinertial = True
            body.mass = mass
            body.ipos = [0, 0, 0]
            body.inertia = inertia
        else:
            geom.mass = mass
        self._objects[obj.name] = _Object(obj, -1, -1, -1)

    def _add_camera(self, ms: Any, cam: CameraSpec) -> None:
        parent = ms.worldbody if cam.link is None else ms.body(cam.link)
        if parent is None:
            raise ValueError(f"camera '{cam.name}': no link '{cam.link}'")
        quat = quat_multiply(cam.pose.orientation, _OPTICAL_TO_GL)
        parent.add_camera(name=cam.name, pos=list(cam.pose.position), quat=_wxyz(quat),
                          fovy=math.degrees(cam.vfov_rad))
        self._cameras[cam.name] = (cam, -1)

    def _resolve_ids(self) -> None:
        model = self.model
        for name, obj in self._objects.items():
            bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
            jid = int(model.body_jntadr[bid])
            obj.bid, obj.qadr, obj.dadr = bid, int(model.jnt_qposadr[jid]), int(model.jnt_dofadr[jid])
        for name, (cam, _) in list(self._cameras.items()):
            self._cameras[name] = (cam, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name))

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int) -> None:
        """``mj_resetData`` (clears all state incl. warm starts), then the seeded initial state.

        MuJoCo keeps no hidden state outside ``MjData``, so this is exact: a reset episode is
        bitwise identical to one in a freshly built world.
        """
        self._check_loaded()
        seed = operator.index(seed)
        if self._spec is not self._loaded_spec:   # objects were spawned or deleted
            self._build_world(self._loaded_spec)
        model, data = self.model, self.data
        mujoco.mj_resetData(model, data)
        rng = np.random.default_rng(seed)
        for robot, joints, _ in self._robots:
            state = {n: (float(robot.initial_positions.get(n, 0.0)), 0.0) for n in joints}
            if robot.sample_initial_state is not None:
                state.update(robot.sample_initial_state(rng))
            for name, (pos, vel) in state.items():
                jt = joints[name]
                data.qpos[jt.qadr] = pos
                data.qvel[jt.dadr] = vel
            # latch "hold still": servo targets = initial positions, cart force 0
            for name in robot.position_joints:
                data.ctrl[joints[name].actuator] = state[name][0]
        self._ee_yaw = 0.0
        self._arm_ramp = None
        self._wrist_turn = None
        poses = self._spec.sample_object_poses(rng) if self._spec.sample_object_poses else {}
        for name, obj in self._objects.items():
            pose = poses.get(name, obj.spec.pose)
            data.qpos[obj.qadr:obj.qadr + 3] = pose.position
            data.qpos[obj.qadr + 3:obj.qadr + 7] = _wxyz(pose.orientation)
            data.qvel[obj.dadr:obj.dadr + 6] = 0.0
        mujoco.mj_forward(model, data)
        self._dirty = False
        self._physics_steps = 0

    # ------------------------------------------------------------------- time
    def step(self, n_control_steps: int = 1) -> None:
        if self._spec is None:
            self._check_loaded()
        if type(n_control_steps) is not int:
            n_control_steps = operator.index(n_control_steps)
        if n_control_steps < 0:
            raise ValueError(f"n_control_steps must be >= 0, got {n_control_steps}")
        n = n_control_steps * self._substeps
        if n and (self._arm_ramp is not None or self._wrist_turn is not None):
            self._step_arm_ramp(n)
            self._dirty = True
        elif n:
            mujoco.mj_step(self.model, self.data, n)
            # mj_step leaves positions-derived quantities (xpos, cam_xpos, cvel) at the state
            # *before* its last integration; they are recomputed on demand by _sync()
            self._dirty = True
        self._physics_steps += n

    def joint_state(self) -> JointState:
        self._check_loaded()
        d = self.data
        if not self._joint_names:
            return JointState((), np.zeros(0), np.zeros(0), np.zeros(0))
        return JointState(self._joint_names, d.qpos[self._qadr], d.qvel[self._dadr],
                          d.qfrc_actuator[self._dadr])

    def joint_limits(self) -> Dict[str, JointLimit]:
        self._check_loaded()
        return {n: JointLimit(j.lower, j.upper, j.max_velocity) for n, j in self._joints.items()}

    def set_joint_targets(self, names: Sequence[str], positions: Sequence[float]) -> None:
        self._check_loaded()
        if not self._position_joints:
            raise self._not_supported(Capability.JOINT_POSITION_CONTROL)
        names = list(names)
        targets = np.asarray(positions, dtype=np.float64)
        if targets.ndim != 1 or len(names) != targets.shape[0]:
            raise ValueError(f"got {len(names)} joint names but {targets.size} positions")
        if not np.all(np.isfinite(targets)):
            raise ValueError(f"joint targets must be finite, got {targets.tolist()}")
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate joint names in {names}")
        joints = []
        for name, target in zip(names, targets):
            joint = self._position_joints.get(name)
            if joint is None:
                if name in self._joints:
                    raise ValueError(
                        f"joint '{name}' is not position-controlled; controllable: {sorted(self._position_joints)}")
                raise ValueError(f"unknown joint '{name}'; known joints: {list(self._joint_names)}")
            if not joint.lower - 1e-9 <= target <= joint.upper + 1e-9:
                raise ValueError(
                    f"target {target:.6g} for joint '{name}' outside limits [{joint.lower:.6g}, {joint.upper:.6g}]")
            joints.append(joint)
        if self._arm is not None:   # a direct target replaces an arm step / wrist turn under way
            acts = {j.actuator for j in joints}
            if self._arm_ramp is not None and acts & set(self._arm_ramp[0].tolist()):
                self._arm_ramp = None
            if self._wrist_turn is not None and self._wrist_turn[0] in acts:
                self._wrist_turn = None
        for joint, target in zip(joints, targets):
            self.data.ctrl[joint.actuator] = float(target)

    # ------------------------------------------------------------ mobile base
    def set_base_velocity(self, linear_x: float, angular_z: float) -> None:
        """Diff-drive command: wheel speed servos; above the wheel speed limit both are scaled
        down together (keeping the path curvature), as in PyBullet."""
        self.require(Capability.BASE_VELOCITY)
        if not (math.isfinite(linear_x) and math.isfinite(angular_z)):
            raise ValueError(f"base velocity must be finite, got ({linear_x}, {angular_z})")
        robot, left_j, right_j, _ = self._mobile
        dd = robot.diff_drive
        left, right = diff_drive_wheel_speeds(float(linear_x), float(angular_z), dd.wheel_radius, dd.track_width)
        scale = max(1.0, abs(left) / dd.max_wheel_speed, abs(right) / dd.max_wheel_speed)
        self.data.ctrl[left_j.actuator] = left / scale
        self.data.ctrl[right_j.actuator] = right / scale

    def base_odometry(self) -> Odometry:
        """Ground-truth odometry of ``base_link`` (``odom`` = world); twist in ``base_link``."""
        self.require(Capability.BASE_VELOCITY)
        self._sync()
        _, _, _, b = self._mobile
        d = self.data
        vel = np.zeros(6)
        mujoco.mj_objectVelocity(self.model, d, mujoco.mjtObj.mjOBJ_XBODY, b, vel, 1)   # [ang, lin] in base_link
        return Odometry(stamp=self.sim_time, pose=Pose(d.xpos[b].copy(), _xyzw(d.xquat[b])),
                        twist=Twist(vel[3:].copy(), vel[:3].copy()))

    # ---------------------------------------------------------------- cameras
    @property
    def camera_names(self) -> Tuple[str, ...]:
        return tuple(self._cameras) if Capability.CAMERA in self._caps else ()

    def _optical_pose(self, cam: CameraSpec, cid: int) -> Pose:
        d = self.data
        r = d.cam_xmat[cid].reshape(3, 3)
        q_gl = matrix_to_quat(r)
        return Pose(d.cam_xpos[cid].copy(), quat_multiply(q_gl, _OPTICAL_TO_GL))

    def camera_frame(self, name: str) -> CameraFrame:
        self._check_loaded()
        if Capability.CAMERA not in self._caps and self._cameras:
            raise NotSupported(f"camera ({self._camera_reason})", self.scene_name, [str(c) for c in self._caps])
        entry = self._cameras.get(name)
        if entry is None:
            raise ValueError(f"unknown camera '{name}'; cameras: {list(self._cameras)}")
        cam, cid = entry
        self._sync()
        model = self.model
        key = (cam.height, cam.width)
        renderer = self._renderers.get(key)
        if renderer is None:
            model.vis.global_.offwidth = max(model.vis.global_.offwidth, cam.width)
            model.vis.global_.offheight = max(model.vis.global_.offheight, cam.height)
            renderer = self._renderers[key] = mujoco.Renderer(model, cam.height, cam.width)
        # near/far are fractions of the model extent in MuJoCo
        extent = float(model.stat.extent)
        model.vis.map.znear = cam.near / extent
        model.vis.map.zfar = cam.far / extent
        renderer.disable_depth_rendering()
        renderer.update_scene(self.data, camera=cid)
        rgb = renderer.render().copy()
        renderer.enable_depth_rendering()
        renderer.update_scene(self.data, camera=cid)
        depth = renderer.render().astype(np.float32)
        renderer.disable_depth_rendering()
        depth[(depth >= cam.far * (1 - 1e-4)) | ~np.isfinite(depth)] = np.nan
        rgb.setflags(write=False)
        depth.setflags(write=False)
        return CameraFrame(name=name, stamp=self.sim_time, rgb=rgb, depth=depth,
                           intrinsics=CameraIntrinsics.from_vertical_fov(cam.width, cam.height, cam.vfov_rad),
                           pose=self._optical_pose(cam, cid), frame_id=f"{name}_optical_frame")

    def camera_spec(self, name: str) -> CameraSpec:
        return self._camera_entry(name)[0]

    def camera_pose(self, name: str) -> Pose:
        cam, cid = self._camera_entry(name)
        self._sync()
        return self._optical_pose(cam, cid)

    def _camera_entry(self, name: str) -> Tuple[CameraSpec, int]:
        self._check_loaded()
        entry = self._cameras.get(name)
        if entry is None:
            raise ValueError(f"unknown camera '{name}'; cameras: {list(self._cameras)}")
        return entry

    def _renderer(self, width: int, height: int) -> Any:
        model = self.model
        key = (height, width)
        renderer = self._renderers.get(key)
        if renderer is None:
            model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
            model.vis.global_.offheight = max(model.vis.global_.offheight, height)
            renderer = self._renderers[key] = mujoco.Renderer(model, height, width)
        return renderer

    def render_view(self, view: CameraSpec, pose: Optional[Pose] = None, *,
                    window: Optional[Tuple[float, float, float, float]] = None,
                    lighting: Optional[Lighting] = None) -> CameraFrame:
        """A free camera of MuJoCo's scene placed at ``pose`` with the frustum of ``view`` (or of
        ``window``). ``lighting`` is not implemented: MuJoCo's lights are elements of the compiled
        model, not arguments of a render."""
        self._check_loaded()
        if lighting is not None:
            raise self._not_implemented("render_view", "lighting: MuJoCo's lights are elements of the compiled "
                                        "model, not arguments of a render (PyBullet's TinyRenderer light only)")
        if Capability.CAMERA not in self._caps and self._camera_reason:
            raise NotSupported(f"camera ({self._camera_reason})", self.scene_name, [str(c) for c in self._caps])
        if pose is None:
            entry = self._cameras.get(view.name)
            pose = self.camera_pose(view.name) if entry is not None and entry[0] == view else view.pose
        if window is None:
            t = math.tan(0.5 * view.vfov_rad)
            a = t * view.width / view.height
            window = (-a, a, -t, t)
        left, right, bottom, top = (float(v) for v in window)
        if not (right > left and top > bottom):
            raise ValueError(f"window must have left < right and bottom < top, got {tuple(window)}")
        self._sync()
        model = self.model
        renderer = self._renderer(view.width, view.height)
        extent = float(model.stat.extent)
        model.vis.map.znear = view.near / extent
        model.vis.map.zfar = view.far / extent
        r = quat_to_matrix(pose.orientation)   # optical: z forward, y down
        images = []
        for depth_pass in (False, True):
            if depth_pass:
                renderer.enable_depth_rendering()
            else:
                renderer.disable_depth_rendering()
            renderer.update_scene(self.data, camera=-1)
            for gl in renderer.scene.camera:
                gl.pos[:] = pose.position
                gl.forward[:] = r[:, 2]
                gl.up[:] = -r[:, 1]
                gl.frustum_near, gl.frustum_far = view.near, view.far
                gl.frustum_center = 0.5 * (left + right) * view.near
                gl.frustum_width = 0.5 * (right - left) * view.near
                gl.frustum_bottom, gl.frustum_top = bottom * view.near, top * view.near
                gl.orthographic = 0
            scene = renderer.scene
            for light in scene.lights[:scene.nlight]:
                if light.headlight:   # the headlight sits at the viewer's head, looking along the view
                    light.pos[:] = pose.position
                    light.dir[:] = r[:, 2]
            images.append(renderer.render().copy())
        renderer.disable_depth_rendering()
        rgb, depth = images[0], images[1].astype(np.float32)
        depth[(depth >= view.far * (1 - 1e-4)) | ~np.isfinite(depth)] = np.nan
        rgb.setflags(write=False)
        depth.setflags(write=False)
        fx, fy = view.width / (right - left), view.height / (top - bottom)
        intrinsics = CameraIntrinsics(view.width, view.height, fx, fy, -left * fx - 0.5, top * fy - 0.5)
        return CameraFrame(name=view.name, stamp=self.sim_time, rgb=rgb, depth=depth, intrinsics=intrinsics,
                           pose=pose, frame_id=f"{view.name}_optical_frame")

    # -------------------------------------------------- dynamics randomisation
    def _groups(self) -> Dict[str, List[int]]:
        """One group per free object and one for the robots' bodies together (static furniture and
        the world body are left out), robots first, then objects in body order."""
        if self._dynamics_groups is None:
            model = self.model
            robot_bodies: List[int] = []
            objects: Dict[str, List[int]] = {}
            for b in range(1, model.nbody):
                name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b)
                if name in self._objects:
                    objects[name] = [b]
                elif not name.startswith("static_"):
                    robot_bodies.append(b)
            groups: Dict[str, List[int]] = {}
            if robot_bodies:
                groups["+".join(r.name for r, _, _ in self._robots)] = robot_bodies
            groups.update(objects)
            self._dynamics_groups = groups
            self._mass0 = model.body_mass.copy()
            self._friction0 = model.geom_friction[:, 0].copy()
            self._const_data = mujoco.MjData(model)
        return self._dynamics_groups

    def dynamics_bodies(self) -> Tuple[str, ...]:
        """The robots (one body, named by the robots' names joined with '+'), then every free object."""
        self._check_loaded()
        return tuple(self._groups())

    def set_dynamics_scale(self, mass: Mapping[str, float], friction: Mapping[str, float]) -> None:
        """As the contract says; a factor applies to every MuJoCo body of the group (mass) and every
        geom of it (sliding friction). MuJoCo derives constants from the masses (body_subtreemass,
        the inverse weights that scale every constraint's softness): they are recomputed, or a cube
        made 30 % lighter keeps the contact impedance of the nominal one and a firm grasp can blow
        up. On scratch data: ``mj_setConst`` moves the state it is given to qpos0."""
        self._check_loaded()
        groups = self._groups()
        mass_f, friction_f = check_dynamics_scale({n: n for n in groups}, mass, friction)
        model = self.model
        for name, bodies in groups.items():
            for b in bodies:
                if self._mass0[b] > 0:
                    model.body_mass[b] = self._mass0[b] * mass_f.get(name, 1.0)
                for g in range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b]):
                    model.geom_friction[g, 0] = self._friction0[g] * friction_f.get(name, 1.0)
        mujoco.mj_setConst(model, self._const_data)

    def set_object_velocity(self, name: str, linear: Sequence[float],
                            angular: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        """World-frame velocity of a free object (MuJoCo's free joint takes angular velocity in the body frame)."""
        self._check_loaded()
        if name not in self._objects:
            raise ValueError(f"unknown object '{name}'; objects: {', '.join(sorted(self._objects))}")
        self._sync()
        obj, d = self._objects[name], self.data
        r = d.xmat[obj.bid].reshape(3, 3)
        d.qvel[obj.dadr:obj.dadr + 3] = np.asarray(linear, dtype=float)
        d.qvel[obj.dadr + 3:obj.dadr + 6] = r.T @ np.asarray(angular, dtype=float)
        mujoco.mj_forward(self.model, d)

    # ------------------------------------------------------ poses and contacts
    def _body_world_pose(self, b: int) -> Pose:
        self._sync()
        return Pose(self.data.xpos[b].copy(), _xyzw(self.data.xquat[b]))

    def _root_link(self, links: Dict[str, int]) -> int:
        return next(b for b in links.values() if int(self.model.body_parentid[b]) == 0)

    def body_pose(self, name: str) -> Pose:
        self._check_loaded()
        if name in self._objects:
            return self.ground_truth()[name].pose
        for robot, _, links in self._robots:
            if name == robot.name:
                return self._body_world_pose(self._root_link(links))
            if name in links:
                return self._body_world_pose(links[name])
        raise ValueError(f"unknown body '{name}': not an object, a robot or a robot link of the scene")

    def robot_base_pose(self, robot: Optional[str] = None) -> Pose:
        self._check_loaded()
        if not self._robots:
            raise ValueError(f"scene '{self.scene_name}' has no robot")
        if robot is None:
            if self._mobile is not None:
                return self._body_world_pose(self._mobile[3])
            return self._body_world_pose(self._root_link(self._robots[0][2]))
        for spec, _, links in self._robots:
            if spec.name == robot:
                return self._body_world_pose(self._root_link(links))
        raise ValueError(f"unknown robot '{robot}'; robots: {[r.name for r, _, _ in self._robots]}")

    def robot_contacts(self) -> List[str]:
        self.require(Capability.BASE_VELOCITY)
        self._sync()
        model, d = self.model, self.data
        mine = set(next(links for spec, _, links in self._robots if spec is self._mobile[0]).values())
        out = set()
        for i in range(d.ncon):
            c = d.contact[i]
            b1, b2 = int(model.geom_bodyid[c.geom1]), int(model.geom_bodyid[c.geom2])
            for a, other in ((b1, b2), (b2, b1)):
                if a in mine and other not in mine and other != 0:   # body 0: the world (ground)
                    name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, other) or f"body{other}"
                    out.add(name[len("static_"):] if name.startswith("static_") else name)
        return sorted(out)

    # ------------------------------------------------------- visual randomisation
    def _visual_geoms(self) -> Dict[Tuple[str, int], int]:
        model = self.model
        out: Dict[Tuple[str, int], int] = {}
        for b in range(model.nbody):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) or "world"
            name = name[len("static_"):] if name.startswith("static_") else name
            for k, g in enumerate(range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b])):
                out[(name, k)] = g
        return out

    def visual_colors(self) -> Dict[Tuple[str, int], Tuple[float, float, float, float]]:
        """Every geom's ``geom_rgba``, keyed by its body's name (a static body's without ``static_``,
        the world body's ``world``) and its index in the body."""
        self._check_loaded()
        return {key: tuple(float(c) for c in self.model.geom_rgba[g]) for key, g in self._visual_geoms().items()}

    def set_visual_colors(self, colors: Mapping[Tuple[str, int], Sequence[float]]) -> None:
        self._check_loaded()
        geoms = self._visual_geoms()
        unknown = [k for k in colors if k not in geoms]
        if unknown:
            raise KeyError(f"unknown visual shape(s) {unknown}; known: {sorted(geoms)}")
        for key, rgba in colors.items():
            self.model.geom_rgba[geoms[key]] = [float(c) for c in rgba]

    # ----------------------------------------------------------- ground truth
    def link_transforms(self) -> List[LinkTransform]:
        self._check_loaded()
        self._sync()
        model, d = self.model, self.data
        out: List[LinkTransform] = []
        for robot, _, links in self._robots:
            for name, b in links.items():
                parent = int(model.body_parentid[b])
                pos_c, q_c = d.xpos[b], _xyzw(d.xquat[b])
                if parent == 0:
                    if robot.fixed_base:   # a mobile base's root is placed by base_odometry()
                        out.append(LinkTransform("world", name, Pose(pos_c, q_c)))
                    continue
                pname = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, parent)
                r_p = d.xmat[parent].reshape(3, 3)
                q_p_inv = _xyzw(d.xquat[parent]) * np.array([-1, -1, -1, 1])
                out.append(LinkTransform(pname, name, Pose(r_p.T @ (pos_c - d.xpos[parent]),
                                                           quat_multiply(q_p_inv, q_c))))
        return out

    def ground_truth(self) -> Dict[str, ObjectState]:
        self._check_loaded()
        self._sync()
        model, d = self.model, self.data
        out: Dict[str, ObjectState] = {}
        vel = np.zeros(6)
        for name, obj in self._objects.items():
            q = d.qpos[obj.qadr:obj.qadr + 7]
            qv = d.qvel[obj.dadr:obj.dadr + 6]
            r = d.xmat[obj.bid].reshape(3, 3)
            # free joint: linear velocity in world, angular velocity in the body frame
            s = obj.spec
            out[name] = ObjectState(name, Pose(q[:3], _xyzw(q[3:7])), Twist(qv[:3], r @ qv[3:6]),
                                    s.shape, s.color_name, tuple(s.size), s.kind)
        for robot, _, links in self._robots:
            for name, (link, shape, color, size) in robot.link_objects.items():
                b = links[link]
                mujoco.mj_objectVelocity(model, d, mujoco.mjtObj.mjOBJ_BODY, b, vel, 0)
                out[name] = ObjectState(name, Pose(d.xipos[b], _xyzw(d.xquat[b])), Twist(vel[3:], vel[:3]),
                                        shape, color, tuple(size))
        return out

    def spawnable_kinds(self) -> Tuple[str, ...]:
        self._check_loaded()
        return tuple(spawn_templates(self._loaded_spec.objects))

    def spawn_object(self, name: str, kind: str, pose: Pose) -> None:
        self._check_loaded()
        templates = spawn_templates(self._loaded_spec.objects)
        check_spawn(name, kind, pose, self.ground_truth(), templates)
        new = spawned_spec(templates[kind], name, pose)
        self._rebuild_keeping_state(dataclasses.replace(self._spec, objects=tuple(self._spec.objects) + (new,)))

    def delete_object(self, name: str) -> None:
        self._check_loaded()
        check_delete(name, self._objects)
        objects = tuple(o for o in self._spec.objects if o.name != name)
        self._rebuild_keeping_state(dataclasses.replace(self._spec, objects=objects))

    def _rebuild_keeping_state(self, spec: SceneSpec) -> None:
        """Recompile the world for ``spec`` (objects added or removed) and carry the robot's and the
        remaining objects' state, the latched commands and the sim time over; a new object starts at
        rest at its spec pose. MuJoCo's solver warm start is not carried (the next step differs from
        an unedited world's by solver tolerance)."""
        self._sync()
        old = self.data
        joints = {n: (j.qadr, j.dadr) for n, j in self._joints.items()}
        objects = {n: (o.qadr, o.dadr) for n, o in self._objects.items()}
        latched = {k: getattr(self, k) for k in ("_ee_yaw", "_arm_ramp", "_wrist_turn", "_ee_step_physics_steps",
                                                 "_physics_steps")}
        qpos, qvel, ctrl, time = old.qpos.copy(), old.qvel.copy(), old.ctrl.copy(), float(old.time)
        loaded = self._loaded_spec
        self._build_world(spec)
        self._loaded_spec = loaded
        d = self.data
        for name, jt in self._joints.items():
            qa, da = joints[name]
            d.qpos[jt.qadr], d.qvel[jt.dadr] = qpos[qa], qvel[da]
        for name, obj in self._objects.items():
            if name in objects:
                qa, da = objects[name]
                d.qpos[obj.qadr:obj.qadr + 7] = qpos[qa:qa + 7]
                d.qvel[obj.dadr:obj.dadr + 6] = qvel[da:da + 6]
        d.ctrl[:] = ctrl
        d.time = time
        for k, v in latched.items():
            setattr(self, k, v)
        mujoco.mj_forward(self.model, d)
        self._dirty = False

    def set_object_pose(self, name: str, pose: Pose) -> None:
        self._check_loaded()
        if name not in self._objects:
            raise ValueError(f"unknown object '{name}'; objects: {', '.join(sorted(self._objects))}")
        values = list(pose.position) + list(pose.orientation)
        if not all(math.isfinite(float(v)) for v in values):
            raise ValueError(f"pose of '{name}' is not finite: {values}")
        obj = self._objects[name]
        self.data.qpos[obj.qadr:obj.qadr + 3] = pose.position
        self.data.qpos[obj.qadr + 3:obj.qadr + 7] = _wxyz(pose.orientation)
        self.data.qvel[obj.dadr:obj.dadr + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def static_occupancy(self) -> List[OccupancyBox]:
        self.require(Capability.STATIC_OCCUPANCY)
        return list(self._spec.occupancy)

    # ------------------------------------------------- optional robot features
    def set_end_effector_delta(self, dx: float, dy: float, dz: float) -> None:
        """Move the grasp point by ``(dx, dy, dz)`` m in the arm base frame (see the contract).

        MuJoCo has no IK: damped least squares on ``mj_jacBody`` (position and orientation: the
        gripper points down, turned by the latched wrist yaw), with a null-space pull towards the
        ready pose as PyBullet's IK has, joint values clipped to the limits after every iteration.
        The new targets are interpolated over the next control period (as in PyBullet).
        """
        self.require(Capability.END_EFFECTOR_DELTA)
        delta = np.array([dx, dy, dz], dtype=np.float64)
        if not np.all(np.isfinite(delta)):
            raise ValueError(f"end-effector delta must be finite, got {delta.tolist()}")
        robot, joints, links = self._arm
        arm = robot.arm
        self._sync()
        d = self.data
        base_b, ee_b = links[arm.base_link], links[arm.ee_link]
        target = d.xpos[ee_b] + d.xmat[base_b].reshape(3, 3) @ delta
        turn = (0.0, 0.0, math.sin(self._ee_yaw / 2), math.cos(self._ee_yaw / 2))
        target_q = np.array(_wxyz(quat_multiply(_xyzw(d.xquat[base_b]), quat_multiply(turn, arm.ee_down))))
        arm_joints = [joints[n] for n in arm.joints]
        goal = self._solve_ik(arm_joints, ee_b, target, target_q, robot.initial_positions)
        acts = np.array([j.actuator for j in arm_joints], dtype=np.int64)
        ramp = self._arm_ramp
        if ramp is not None:   # chain on from where the last step's interpolation got to
            start = ramp[1] + (ramp[2] - ramp[1]) * (ramp[4] / ramp[3])
        else:
            start = d.qpos[[j.qadr for j in arm_joints]].copy()
        self._arm_ramp = [acts, start, goal, self._ee_step_length(), 0]
        self._wrist_turn = None

    def _solve_ik(self, arm_joints: List[_Joint], ee_b: int, target: np.ndarray, target_q: np.ndarray,
                  initial: Dict[str, float]) -> np.ndarray:
        model, ik = self.model, self._ik_data
        qadr = [j.qadr for j in arm_joints]
        dadr = [j.dadr for j in arm_joints]
        lower = np.array([j.lower if math.isfinite(j.lower) else -2 * math.pi for j in arm_joints])
        upper = np.array([j.upper if math.isfinite(j.upper) else 2 * math.pi for j in arm_joints])
        rest = np.array([initial.get(j.name, 0.0) for j in arm_joints])
        rest[-1] += _WRIST_SIGN * self._ee_yaw   # a turned wrist has its rest turned with it
        ik.qpos[:] = self.data.qpos
        q = ik.qpos[qadr].copy()
        jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        rot_err = np.zeros(3)
        eye = np.eye(len(q))
        for _ in range(_IK_ITERATIONS):
            ik.qpos[qadr] = q
            mujoco.mj_kinematics(model, ik)
            mujoco.mj_comPos(model, ik)
            pos_err = target - ik.xpos[ee_b]
            mujoco.mju_subQuat(rot_err, target_q, ik.xquat[ee_b])   # in the current ee frame
            err = np.concatenate([pos_err, ik.xmat[ee_b].reshape(3, 3) @ rot_err])
            if np.linalg.norm(err) < _IK_TOLERANCE:
                break
            mujoco.mj_jacBody(model, ik, jacp, jacr, ee_b)
            jac = np.vstack([jacp[:, dadr], jacr[:, dadr]])
            pinv = jac.T @ np.linalg.inv(jac @ jac.T + _IK_DAMPING ** 2 * np.eye(6))
            dq = pinv @ err + (eye - pinv @ jac) @ (_IK_NULLSPACE_GAIN * (rest - q))
            # at most _IK_MAX_STEP rad per joint and iteration: far targets near a singularity
            # otherwise throw the arm about
            dq *= min(1.0, _IK_MAX_STEP / max(float(np.abs(dq).max()), 1e-12))
            q = np.clip(q + dq, lower, upper)
        return q

    def _set_finger_pad_solref(self, solref: Optional[Sequence[float]] = None) -> None:
        """Give the colliding geoms of the bodies the finger joints move ``solref`` ``(a, b)``; None:
        the stiffer pad contact for the physics rate (see ``_FINGER_CONTACT_BH``). A contact with one
        direct-form solref geom takes that geom's solref, so every contact of a finger gets it. Not on
        the simulator contract: experiments compare with MuJoCo's default ``(0.02, 1)``
        (:func:`sim_bridges.in_process.set_finger_solref`)."""
        robot, joints, _ = self._arm
        if solref is None:
            h = 1.0 / self._physics_rate_hz
            solref = (-_FINGER_CONTACT_KH2 / h ** 2, -_FINGER_CONTACT_BH / h)
        model = self.model
        bodies = {int(model.jnt_bodyid[joints[name].jid]) for name in robot.arm.finger_joints}
        for g in range(model.ngeom):
            if int(model.geom_bodyid[g]) in bodies and (model.geom_contype[g] or model.geom_conaffinity[g]):
                model.geom_solref[g] = solref

    def set_end_effector_step_period(self, period_s: Optional[float]) -> None:
        self.require(Capability.END_EFFECTOR_DELTA)
        self._ee_step_physics_steps = physics_steps_per_ee_step(period_s, self._physics_rate_hz)

    def _ee_step_length(self) -> int:
        """Physics steps an end-effector step is spread over (one control period unless set)."""
        return self._ee_step_physics_steps or max(1, self._substeps)

    def set_end_effector_yaw(self, yaw: float) -> None:
        """Latch the wrist yaw (see the contract): the last arm joint turns to it at a bounded
        speed (as in PyBullet), the other arm joints hold where they are."""
        self.require(Capability.END_EFFECTOR_DELTA)
        yaw = float(yaw)
        if not (math.isfinite(yaw) and abs(yaw) <= math.pi / 2 + 1e-9):
            raise ValueError(f"end-effector yaw must be finite and within +-pi/2 rad, got {yaw}")
        robot, joints, _ = self._arm
        arm_joints = [joints[n] for n in robot.arm.joints]
        self._sync()
        turn = yaw - self._measured_ee_yaw()
        positions = self.data.qpos[[j.qadr for j in arm_joints]].copy()
        wrist = arm_joints[-1]
        goal = min(max(positions[-1] + _WRIST_SIGN * turn, wrist.lower), wrist.upper)
        self._ee_yaw = yaw
        self._arm_ramp = None
        for j, pos in zip(arm_joints[:-1], positions[:-1]):
            self.data.ctrl[j.actuator] = pos
        self._wrist_turn = (wrist.actuator, float(goal))

    def _measured_ee_yaw(self) -> float:
        robot, _, links = self._arm
        arm = robot.arm
        d = self.data
        q_base, q_ee = _xyzw(d.xquat[links[arm.base_link]]), _xyzw(d.xquat[links[arm.ee_link]])
        rel = quat_multiply(q_base * np.array([-1, -1, -1, 1]), q_ee)
        turn = quat_multiply(rel, np.asarray(arm.ee_down) * np.array([-1, -1, -1, 1]))
        m = quat_to_matrix(turn)
        return math.atan2(m[1, 0], m[0, 0])

    def _step_arm_ramp(self, n: int) -> None:
        """Physics steps one at a time while an end-effector step or a wrist turn is under way."""
        model, d = self.model, self.data
        max_turn = _WRIST_TURN_SPEED / self._physics_rate_hz
        for _ in range(n):
            ramp = self._arm_ramp
            if ramp is not None and ramp[4] < ramp[3]:
                ramp[4] += 1
                d.ctrl[ramp[0]] = ramp[1] + (ramp[2] - ramp[1]) * (ramp[4] / ramp[3])
            if self._wrist_turn is not None:
                act, goal = self._wrist_turn
                now = float(d.ctrl[act])
                d.ctrl[act] = now + min(max(goal - now, -max_turn), max_turn)
                if d.ctrl[act] == goal:
                    self._wrist_turn = None
            mujoco.mj_step(model, d)

    def set_gripper(self, open: bool) -> None:  # noqa: A002
        """Both finger servos to the open / closed width (force limit: the URDF's finger effort)."""
        self.require(Capability.GRIPPER)
        robot, joints, _ = self._arm
        arm = robot.arm
        width = arm.finger_open if open else arm.finger_closed
        for name in arm.finger_joints:
            self.data.ctrl[joints[name].actuator] = width

    def gripper_contacts(self) -> List[str]:
        """What touches the fingers now: other body, normal force, distance (MuJoCo's contacts)."""
        if self._arm is None:
            return []
        robot, _, links = self._arm
        self._sync()
        model, d = self.model, self.data
        fingers = {links[n] for n in links if "finger" in n}
        force = np.zeros(6)
        lines = []
        for i in range(d.ncon):
            c = d.contact[i]
            b1, b2 = int(model.geom_bodyid[c.geom1]), int(model.geom_bodyid[c.geom2])
            for mine, other in ((b1, b2), (b2, b1)):
                if mine in fingers:
                    mujoco.mj_contactForce(model, d, i, force)
                    name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, other) or f"body {other}"
                    lines.append(f"{mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, mine)} touches {name}: "
                                 f"normal force {force[0]:.1f} N, distance {c.dist * 1000:+.1f} mm")
                    break
        return lines

    def set_cart_force(self, force: float) -> None:
        """Latched horizontal force on the cart (N, +x): a MuJoCo ``motor`` actuator's control."""
        self.require(Capability.CART_FORCE)
        robot, joint = self._cart
        limit = robot.cart_max_force
        if not math.isfinite(force) or abs(force) > limit:
            raise ValueError(f"cart force must be finite and within +-{limit} N, got {force}")
        self.data.ctrl[joint.actuator] = float(force)

    def set_plate_angles(self, pitch: float, roll: float) -> None:
        """Plate tilt targets (position servos); ``ValueError`` beyond the +-0.25 rad limits."""
        self.require(Capability.PLATE_ANGLES)
        self.set_joint_targets(self._plate.plate_joints, [pitch, roll])

    # -------------------------------------------------------------- lifecycle
    def _close_renderers(self) -> None:
        for renderer in getattr(self, "_renderers", {}).values():
            try:
                renderer.close()
            except Exception:
                pass
        self._renderers = {}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._close_renderers()
        self._clear_scene()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _sync(self) -> None:
        """Bring derived quantities (link poses, velocities, cameras) up to the current qpos/qvel.

        ``mj_forward`` reads state only (qacc_warmstart is written by the integrator, not by it),
        so calling it or not never changes a trajectory.
        """
        if self._dirty:
            mujoco.mj_forward(self.model, self.data)
            self._dirty = False
