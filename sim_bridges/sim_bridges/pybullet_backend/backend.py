"""PyBullet implementation of :class:`sim_bridges.contract.SimBackend`."""

from __future__ import annotations

import math
import operator
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pybullet as p
import pybullet_data

from ..backend_base import BackendBase, check_dynamics_scale
from ..contract import (
    CameraFrame,
    Capability,
    JointLimit,
    JointState,
    Lighting,
    LinkTransform,
    ObjectState,
    OccupancyBox,
    Odometry,
    Pose,
    Twist,
    physics_steps_per_ee_step,
)
from ..geometry import diff_drive_wheel_speeds, quat_to_matrix
from ..robots.spec import CameraSpec, RobotSpec
from ..scenes import make_scene
from ..scenes.meshes import mesh_placement
from ..scenes.spec import ObjectSpec, SceneSpec
from ..spawning import check_delete, check_spawn, spawn_templates, spawned_spec
from .camera import (
    PyBulletCamera,
    fov_projection,
    frustum_matrix,
    render_rgbd,
    tiny_renderer_intrinsics,
    window_intrinsics,
)

__all__ = ["PyBulletBackend"]

#: name of the ground plane among :meth:`PyBulletBackend.dynamics_bodies`
GROUND_PLANE = "ground_plane"

_MOVABLE = (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC)
#: Target speed used to turn a velocity motor into a pure force source (see set_cart_force).
_FORCE_MODE_SPEED = 1.0e3
_IDENTITY = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
#: turning the last arm joint by +a turns a downward-pointing gripper by WRIST_SIGN * a about the
#: arm base's z (its axis points down: the two turn opposite ways)
WRIST_SIGN = -1.0
#: rad/s of a wrist turn (set_end_effector_yaw): 45 deg in ~0.4 s
WRIST_TURN_SPEED = 2.0


@dataclass
class _Joint:
    name: str
    body: int
    index: int
    lower: float
    upper: float
    max_velocity: float
    max_force: float


@dataclass
class _ArmRamp:
    """Joint targets of an end-effector step, moved from ``start`` to ``goal`` in equal parts over
    the ``n`` physics steps of one control period (see ``_solve_end_effector``)."""
    body: int
    indices: List[int]
    forces: List[float]
    start: np.ndarray
    goal: np.ndarray
    n: int
    k: int = 0

    @property
    def current(self) -> np.ndarray:
        return self.start + (self.goal - self.start) * (self.k / self.n)


@dataclass
class _Robot:
    spec: RobotSpec
    body: int
    joints: Dict[str, _Joint]  # movable joints, URDF order
    links: Dict[str, int]  # link name -> index (root = -1)
    joint_indices: List[int] = field(default_factory=list)
    link_parents: Dict[int, int] = field(default_factory=dict)  # link index -> parent link index


@dataclass
class _Object:
    spec: ObjectSpec
    body: int
    # root-link frame relative to the inertial frame PyBullet reports (identity for primitives)
    com_to_link: Tuple[Tuple[float, ...], Tuple[float, ...]] = _IDENTITY


class PyBulletBackend(BackendBase):
    """Headless (``p.DIRECT``) PyBullet simulation behind the backend contract.

    Each instance owns its own physics client, so several backends can run in
    one process; no call ever goes to PyBullet's implicit default client.

    :param physics_rate_hz: fixed integration rate
    :param control_rate_hz: rate of :meth:`step`; must divide ``physics_rate_hz``
    :param gui: open the PyBullet GUI instead of running headless
    :param solver_iterations: constraint solver iterations per physics step
    :param reset_mode: ``"rebuild"`` (bitwise-reproducible resets) or
        ``"snapshot"`` (faster, exact only without contacts); see :meth:`reset`

    Example::

        with PyBulletBackend() as sim:
            sim.load_scene("cartpole")
            sim.reset(seed=0)
            sim.set_cart_force(5.0)
            sim.step(10)
            print(sim.joint_state().position)
    """

    def __init__(
        self,
        physics_rate_hz: float = 240.0,
        control_rate_hz: float = 60.0,
        gui: bool = False,
        solver_iterations: int = 50,
        reset_mode: str = "rebuild",
    ) -> None:
        if reset_mode not in ("rebuild", "snapshot"):
            raise ValueError(f"reset_mode must be 'rebuild' or 'snapshot', got {reset_mode!r}")
        self._reset_mode = reset_mode
        self._init_rates(physics_rate_hz, control_rate_hz)
        self._solver_iterations = int(solver_iterations)
        self._cid = p.connect(p.GUI if gui else p.DIRECT)
        if self._cid < 0:
            raise RuntimeError("could not connect to a PyBullet physics server")
        self._closed = False
        self._tmpdir: Optional[str] = None
        self._clear_scene()

    # ------------------------------------------------------------------ setup
    def _clear_scene(self) -> None:
        self._spec: Optional[SceneSpec] = None
        self._caps: frozenset = frozenset()
        self._robots: List[_Robot] = []
        self._objects: Dict[str, _Object] = {}
        self._scene_edited = False   # objects spawned or deleted since the world was built
        self._finger_gear: Optional[int] = None
        self._joints: Dict[str, _Joint] = {}
        self._joint_names: Tuple[str, ...] = ()
        self._position_joints: Dict[str, _Joint] = {}
        self._joint_groups: List[Tuple[int, List[int]]] = []
        self._cameras: Dict[str, PyBulletCamera] = {}
        self._snapshot: Optional[int] = None
        self._stepped_since_build = False
        self._physics_steps = 0
        self._mobile: Optional[_Robot] = None
        self._arm: Optional[_Robot] = None
        self._ee_yaw = 0.0   # latched wrist yaw of set_end_effector_yaw (rad); 0 after a reset
        self._arm_ramp: Optional[_ArmRamp] = None   # end-effector step being interpolated
        self._ee_step_physics_steps: Optional[int] = None   # set_end_effector_step_period (None: a control period)
        self._cart: Optional[_Robot] = None
        self._plate: Optional[_Robot] = None
        self._body_names: Dict[int, str] = {}   # body id -> ground_plane, object, static or robot name
        # (body, link, mass, lateral friction) as built, read on the first dynamics call
        self._dynamics_nominal: Optional[List[Tuple[int, int, float, float]]] = None

    @property
    def client_id(self) -> int:
        """PyBullet physics client id: a test-only accessor (tests, benchmarks and one-off probes that
        call PyBullet directly). Stack code goes through the contract; tests/test_backend_boundary.py
        keeps it out of everything else."""
        return self._cid

    def body_id(self, name: str) -> int:
        """PyBullet body id of a robot, object, static body or the ground plane (``ground_plane``)
        by name: a test-only accessor, used with :attr:`client_id`."""
        self._check_loaded()
        for body, body_name in self._body_names.items():
            if body_name == name:
                return body
        raise ValueError(f"unknown body '{name}'; bodies: {sorted(self._body_names.values())}")

    def load_scene(self, name: str, **options: Any) -> None:
        """Build scene ``name`` and reset it with ``seed`` (option, default 0).

        Other options go to the scene factory (see ``sim_bridges.scenes``).

        :raises ValueError: for an unknown scene name (listing the valid ones)
            or options the scene does not accept
        """
        self._check_open()
        seed = options.pop("seed", 0)
        try:
            spec = make_scene(name, **options)
        except TypeError as exc:  # unexpected keyword for that factory
            raise ValueError(f"bad options for scene '{name}': {exc}") from None
        self._build_world(spec)
        self.reset(seed)

    def _build_world(self, spec: SceneSpec) -> None:
        """(Re)create the whole PyBullet world for ``spec`` and snapshot it."""
        cid = self._cid
        p.resetSimulation(physicsClientId=cid)
        self._clear_scene()
        self._cleanup_tmpdir()
        p.setPhysicsEngineParameter(
            fixedTimeStep=1.0 / self._physics_rate_hz,
            numSubSteps=0,
            numSolverIterations=self._solver_iterations,
            # sort contact pairs so solver order never depends on history: needed
            # for bitwise-identical trajectories after reset()
            deterministicOverlappingPairs=1,
            physicsClientId=cid,
        )
        p.setGravity(0.0, 0.0, -spec.gravity, physicsClientId=cid)
        if spec.ground_plane:
            plane = p.loadURDF(os.path.join(pybullet_data.getDataPath(), "plane.urdf"), physicsClientId=cid)
            self._body_names[plane] = GROUND_PLANE
        for obj in spec.static + spec.objects:
            self._build_object(obj)
        for robot_spec in spec.robots:
            self._build_robot(robot_spec)
        self._spec = spec
        self._caps = spec.capabilities
        self._build_cameras(spec)
        # Pristine state (no contacts, no history) that every reset starts from.
        self._snapshot = p.saveState(physicsClientId=cid)
        self._stepped_since_build = False

    def _build_object(self, obj: ObjectSpec) -> None:
        cid = self._cid
        pos, orn = tuple(obj.pose.position), tuple(obj.pose.orientation)
        if obj.urdf_path is not None:
            body = p.loadURDF(
                obj.urdf_path, pos, orn, flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=cid
            )
        else:
            sx, sy, sz = obj.size
            if obj.shape == "box":
                geo = dict(shapeType=p.GEOM_BOX, halfExtents=[sx / 2, sy / 2, sz / 2])
                col = p.createCollisionShape(physicsClientId=cid, **geo)
                vis = p.createVisualShape(rgbaColor=obj.rgba, physicsClientId=cid, **geo)
            elif obj.shape == "sphere":
                col = p.createCollisionShape(p.GEOM_SPHERE, radius=sx / 2, physicsClientId=cid)
                vis = p.createVisualShape(p.GEOM_SPHERE, radius=sx / 2, rgbaColor=obj.rgba, physicsClientId=cid)
            elif obj.shape == "mesh":  # the bounding box centred on the body's origin (scenes.meshes)
                place, scale = mesh_placement(obj.mesh), [obj.mesh.scale] * 3
                col = p.createCollisionShape(p.GEOM_MESH, fileName=obj.mesh.collision_file, meshScale=scale,
                                             collisionFramePosition=place.offset,
                                             collisionFrameOrientation=place.orientation, physicsClientId=cid)
                vis = p.createVisualShape(p.GEOM_MESH, fileName=obj.mesh.path, meshScale=scale, rgbaColor=obj.rgba,
                                          visualFramePosition=place.offset, visualFrameOrientation=place.orientation,
                                          physicsClientId=cid)
            else:  # cylinder along z
                col = p.createCollisionShape(p.GEOM_CYLINDER, radius=sx / 2, height=sz, physicsClientId=cid)
                vis = p.createVisualShape(
                    p.GEOM_CYLINDER, radius=sx / 2, length=sz, rgbaColor=obj.rgba, physicsClientId=cid
                )
            body = p.createMultiBody(obj.mass, col, vis, pos, orn, physicsClientId=cid)
            if obj.shape == "mesh":  # the object's colour, not the file's texture (as MuJoCo draws it)
                p.changeVisualShape(body, -1, textureUniqueId=-1, rgbaColor=obj.rgba, physicsClientId=cid)
            p.changeDynamics(
                body,
                -1,
                lateralFriction=obj.lateral_friction,
                rollingFriction=obj.rolling_friction,
                spinningFriction=obj.spinning_friction,
                restitution=obj.restitution,
                physicsClientId=cid,
            )
        self._body_names[body] = obj.name
        if obj.mass > 0:
            self._objects[obj.name] = _Object(obj, body, self._com_to_link(body))

    def _com_to_link(self, body: int) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
        info = p.getDynamicsInfo(body, -1, physicsClientId=self._cid)
        return p.invertTransform(info[3], info[4])

    def _urdf_file(self, spec: RobotSpec) -> str:
        if spec.urdf_path is not None:
            return spec.urdf_path
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="sim_bridges_")
        path = os.path.join(self._tmpdir, f"{spec.name}.urdf")
        with open(path, "w", encoding="utf-8") as f:
            f.write(spec.urdf_text)
        return path

    def _build_robot(self, spec: RobotSpec) -> None:
        cid = self._cid
        flags = p.URDF_USE_INERTIA_FROM_FILE if spec.inertia_from_file else 0
        body = p.loadURDF(
            self._urdf_file(spec),
            tuple(spec.base_pose.position),
            tuple(spec.base_pose.orientation),
            useFixedBase=spec.fixed_base,
            flags=flags,
            physicsClientId=cid,
        )
        links = {p.getBodyInfo(body, physicsClientId=cid)[0].decode(): -1}
        parents: Dict[int, int] = {}
        joints: Dict[str, _Joint] = {}
        for j in range(p.getNumJoints(body, physicsClientId=cid)):
            info = p.getJointInfo(body, j, physicsClientId=cid)
            links[info[12].decode()] = j
            parents[j] = info[16]
            if info[2] not in _MOVABLE:
                continue
            name, lower, upper = info[1].decode(), float(info[8]), float(info[9])
            if upper < lower or (lower == 0.0 and upper == 0.0 and info[2] == p.JOINT_REVOLUTE):
                lower, upper = -math.inf, math.inf  # continuous joint
            if name in self._joints:
                raise ValueError(f"duplicate joint name '{name}' in scene")
            joints[name] = _Joint(name, body, j, lower, upper, float(info[11]), float(info[10]))
        robot = _Robot(spec, body, joints, links, [jt.index for jt in joints.values()], parents)
        for name in spec.position_joints + spec.passive_joints:
            if name not in joints:
                raise ValueError(f"robot '{spec.name}': no movable joint '{name}'")
        self._robots.append(robot)
        self._body_names[body] = spec.name
        self._joints.update(joints)
        self._joint_names += tuple(joints)
        self._joint_groups.append((body, robot.joint_indices))
        self._position_joints.update({n: joints[n] for n in spec.position_joints})
        if spec.diff_drive is not None:
            self._mobile = robot
        if spec.arm is not None:
            self._arm = robot
            if spec.arm.fingers_coupled and len(spec.arm.finger_joints) == 2:
                self._couple_fingers(robot, spec.arm)
            if not spec.arm.finger_friction_anchors:
                for name in spec.arm.finger_joints:   # see ArmSpec.finger_friction_anchors
                    p.changeDynamics(robot.body, robot.joints[name].index, frictionAnchor=0,
                                     physicsClientId=self._cid)
        if spec.cart_joint is not None:
            self._cart = robot
        if spec.plate_joints is not None:
            self._plate = robot

    def _couple_fingers(self, robot: _Robot, arm) -> None:
        """Mirror the two fingers (gear ratio -1 between their joints, as the PyBullet Panda examples).

        The Franka Hand drives both fingers from one motor; two independent position motors
        instead let a carried object slide the finger pair sideways as one piece.
        """
        a, b = (robot.joints[n].index for n in arm.finger_joints)
        c = p.createConstraint(robot.body, a, robot.body, b, jointType=p.JOINT_GEAR, jointAxis=[1, 0, 0],
                               parentFramePosition=[0, 0, 0], childFramePosition=[0, 0, 0], physicsClientId=self._cid)
        p.changeConstraint(c, gearRatio=-1, erp=0.1, maxForce=50, physicsClientId=self._cid)
        self._finger_gear = c

    def _build_cameras(self, spec: SceneSpec) -> None:
        robots = {r.spec.name: r for r in self._robots}
        for cam in spec.all_cameras:
            mount = None
            if cam.link is not None:
                robot = robots[cam.robot]
                mount = (robot.body, robot.links[cam.link])
            self._cameras[cam.name] = PyBulletCamera(cam, self._cid, mount)

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int) -> None:
        """Return to the freshly built world, then apply the seeded randomisation.

        With ``reset_mode="rebuild"`` (default) a world that has been stepped is
        rebuilt from scratch (``resetSimulation``): Bullet keeps per-pair and
        per-collider bookkeeping that no snapshot restores, and it changes
        contact-rich trajectories by up to ~1e-4 m. Rebuilding makes every
        episode bitwise identical to one in a fresh process, at a cost of
        ~3 ms (cartpole) to ~100 ms (scenes with a Panda).
        ``reset_mode="snapshot"`` only restores a saved state (sub-millisecond);
        it is exact for contact-free scenes such as ``cartpole``.
        """
        self._check_loaded()
        seed = operator.index(seed)
        cid = self._cid
        if (self._stepped_since_build and self._reset_mode == "rebuild") or self._scene_edited:
            self._build_world(self._spec)
        p.restoreState(self._snapshot, physicsClientId=cid)
        self._ee_yaw = 0.0
        self._arm_ramp = None
        rng = np.random.default_rng(seed)
        for robot in self._robots:
            spec = robot.spec
            p.resetBasePositionAndOrientation(
                robot.body, tuple(spec.base_pose.position), tuple(spec.base_pose.orientation), physicsClientId=cid
            )
            p.resetBaseVelocity(robot.body, (0, 0, 0), (0, 0, 0), physicsClientId=cid)
            state = {n: (float(spec.initial_positions.get(n, 0.0)), 0.0) for n in robot.joints}
            if spec.sample_initial_state is not None:
                state.update(spec.sample_initial_state(rng))
            for name, (pos, vel) in state.items():
                p.resetJointState(robot.body, robot.joints[name].index, pos, vel, physicsClientId=cid)
            self._apply_default_controls(robot, state)
        poses = self._spec.sample_object_poses(rng) if self._spec.sample_object_poses else {}
        for name, obj in self._objects.items():
            pose = poses.get(name, obj.spec.pose)
            p.resetBasePositionAndOrientation(
                obj.body, *self._link_to_com(obj, pose), physicsClientId=cid
            )
            p.resetBaseVelocity(obj.body, (0, 0, 0), (0, 0, 0), physicsClientId=cid)
        # Bullet's sleep timers are not part of the snapshot: without a wake-up a
        # body that rested long enough last episode would start this one asleep.
        for body in [o.body for o in self._objects.values()] + [r.body for r in self._robots]:
            p.changeDynamics(body, -1, activationState=p.ACTIVATION_STATE_WAKE_UP, physicsClientId=cid)
        self._physics_steps = 0

    def _link_to_com(self, obj: _Object, pose: Pose):
        pos, orn = tuple(pose.position), tuple(pose.orientation)
        if obj.com_to_link == _IDENTITY:
            return pos, orn
        return p.multiplyTransforms(pos, orn, *p.invertTransform(*obj.com_to_link))

    def _apply_default_controls(self, robot: _Robot, state: Dict[str, Tuple[float, float]]) -> None:
        """Latch the 'hold still' commands: targets = initial positions, wheels stopped."""
        cid = self._cid
        spec = robot.spec
        # PyBullet gives every joint a velocity motor by default: switch it off for
        # passive joints (and everything not driven below) so they move freely.
        for joint in robot.joints.values():
            p.setJointMotorControl2(robot.body, joint.index, p.VELOCITY_CONTROL, force=0.0, physicsClientId=cid)
        if spec.position_joints:
            js = [robot.joints[n] for n in spec.position_joints]
            self._position_control(robot.body, js, [state[n][0] for n in spec.position_joints])
        if spec.diff_drive is not None:
            self._wheel_control(0.0, 0.0)

    # ------------------------------------------------------------------- time
    def step(self, n_control_steps: int = 1) -> None:
        """Advance ``n_control_steps`` control periods.

        Hot path: commands are latched in PyBullet's motors, so stepping is just
        the bare ``stepSimulation`` loop (no per-step Python work besides it).
        """
        if self._spec is None:
            self._check_loaded()
        if type(n_control_steps) is not int:  # exact-type check is cheaper than index() per call
            n_control_steps = operator.index(n_control_steps)
        if n_control_steps < 0:
            raise ValueError(f"n_control_steps must be >= 0, got {n_control_steps}")
        n = n_control_steps * self._substeps
        # positional client id: keyword parsing costs ~0.2 us per call in PyBullet
        step_simulation, cid = p.stepSimulation, self._cid
        ramp = self._arm_ramp
        if ramp is not None and ramp.k < ramp.n:
            # an end-effector step in progress: one interpolated target per physics step
            for _ in range(n):
                if ramp.k < ramp.n:
                    ramp.k += 1
                    p.setJointMotorControlArray(ramp.body, ramp.indices, p.POSITION_CONTROL,
                                                targetPositions=ramp.current.tolist(), forces=ramp.forces,
                                                physicsClientId=cid)
                step_simulation(cid)
        elif n == 1:
            step_simulation(cid)
        else:
            for _ in range(n):
                step_simulation(cid)
        self._physics_steps += n
        self._stepped_since_build = True

    def joint_state(self) -> JointState:
        self._check_loaded()
        cid = self._cid
        states: list = []
        for body, indices in self._joint_groups:
            if indices:
                states.extend(p.getJointStates(body, indices, physicsClientId=cid))
        if not states:
            return JointState((), np.zeros(0), np.zeros(0), np.zeros(0))
        arr = np.array([(s[0], s[1], s[3]) for s in states], dtype=np.float64)
        return JointState(self._joint_names, arr[:, 0], arr[:, 1], arr[:, 2])

    def read_joint_state_into(self, position: np.ndarray, velocity: np.ndarray, effort: np.ndarray) -> None:
        # the same getJointStates reads as joint_state(), written straight into the caller's rows
        self._check_loaded()
        cid, k = self._cid, 0
        for body, indices in self._joint_groups:
            if indices:
                for s in p.getJointStates(body, indices, physicsClientId=cid):
                    position[k], velocity[k], effort[k] = s[0], s[1], s[3]
                    k += 1

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
                        f"joint '{name}' is not position-controlled; controllable: {sorted(self._position_joints)}"
                    )
                raise ValueError(f"unknown joint '{name}'; known joints: {list(self._joint_names)}")
            if not joint.lower - 1e-9 <= target <= joint.upper + 1e-9:
                raise ValueError(
                    f"target {target:.6g} for joint '{name}' outside limits [{joint.lower:.6g}, {joint.upper:.6g}]"
                )
            joints.append(joint)
        by_body: Dict[int, Tuple[list, list]] = {}
        for joint, target in zip(joints, targets):
            js, ts = by_body.setdefault(joint.body, ([], []))
            js.append(joint)
            ts.append(float(target))
        for body, (js, ts) in by_body.items():
            self._position_control(body, js, ts)

    def _position_control(self, body: int, joints: Sequence[_Joint], targets: Sequence[float]) -> None:
        ramp = self._arm_ramp
        if ramp is not None and ramp.body == body and set(ramp.indices) & {j.index for j in joints}:
            self._arm_ramp = None   # a direct target replaces an end-effector step in progress
        p.setJointMotorControlArray(
            body,
            [j.index for j in joints],
            p.POSITION_CONTROL,
            targetPositions=list(targets),
            forces=[j.max_force for j in joints],
            physicsClientId=self._cid,
        )

    # ------------------------------------------------------------ mobile base
    def set_base_velocity(self, linear_x: float, angular_z: float) -> None:
        """Diff-drive command; wheel speeds above the limit are scaled down together
        (keeping the path curvature) rather than clipped independently."""
        self.require(Capability.BASE_VELOCITY)
        if not (math.isfinite(linear_x) and math.isfinite(angular_z)):
            raise ValueError(f"base velocity must be finite, got ({linear_x}, {angular_z})")
        self._wheel_control(float(linear_x), float(angular_z))
        if linear_x or angular_z:
            # Bullet puts a multibody that rested ~2 s to sleep, and a velocity motor alone does not
            # wake it (suspected in a fetch whose base stood still under a steady command). A no-op
            # for an awake body.
            p.changeDynamics(self._mobile.body, -1, activationState=p.ACTIVATION_STATE_WAKE_UP,
                             physicsClientId=self._cid)

    def _wheel_control(self, linear_x: float, angular_z: float) -> None:
        robot = self._mobile
        dd = robot.spec.diff_drive
        left, right = diff_drive_wheel_speeds(linear_x, angular_z, dd.wheel_radius, dd.track_width)
        scale = max(1.0, abs(left) / dd.max_wheel_speed, abs(right) / dd.max_wheel_speed)
        p.setJointMotorControlArray(
            robot.body,
            [robot.joints[dd.left_wheel_joint].index, robot.joints[dd.right_wheel_joint].index],
            p.VELOCITY_CONTROL,
            targetVelocities=[left / scale, right / scale],
            forces=[dd.wheel_torque, dd.wheel_torque],
            physicsClientId=self._cid,
        )

    def base_odometry(self) -> Odometry:
        """Ground-truth odometry: ``odom`` coincides with the world frame."""
        self.require(Capability.BASE_VELOCITY)
        cid, body = self._cid, self._mobile.body
        pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)
        lin, ang = p.getBaseVelocity(body, physicsClientId=cid)
        r = quat_to_matrix(orn)
        # base_link's inertial frame is its link frame (see the URDF), so no offset here
        return Odometry(
            stamp=self.sim_time,
            pose=Pose(pos, orn),
            twist=Twist(r.T @ np.asarray(lin), r.T @ np.asarray(ang)),
        )

    # ---------------------------------------------------------------- cameras
    @property
    def camera_names(self) -> Tuple[str, ...]:
        return tuple(self._cameras)

    def camera_frame(self, name: str) -> CameraFrame:
        self._check_loaded()
        camera = self._cameras.get(name)
        if camera is None:
            raise ValueError(f"unknown camera '{name}'; cameras: {list(self._cameras)}")
        return camera.render(self.sim_time)

    def camera_spec(self, name: str) -> CameraSpec:
        return self._camera(name).spec

    def camera_pose(self, name: str) -> Pose:
        return self._camera(name).optical_pose()

    def _camera(self, name: str) -> PyBulletCamera:
        self._check_loaded()
        camera = self._cameras.get(name)
        if camera is None:
            raise ValueError(f"unknown camera '{name}'; cameras: {list(self._cameras)}")
        return camera

    def render_view(self, view: CameraSpec, pose: Optional[Pose] = None, *,
                    window: Optional[Tuple[float, float, float, float]] = None,
                    lighting: Optional[Lighting] = None) -> CameraFrame:
        """As the contract says. PyBullet's renderer keeps the last light it was given for every
        later render of the client (``camera_frame`` included) until another one is given."""
        self._check_loaded()
        if pose is None:
            mounted = self._cameras.get(view.name)
            pose = mounted.optical_pose() if mounted is not None and mounted.spec == view else view.pose
        if window is None:
            projection, intrinsics = fov_projection(view, self._cid), tiny_renderer_intrinsics(view)
        else:
            left, right, bottom, top = (float(v) for v in window)
            if not (right > left and top > bottom):
                raise ValueError(f"window must have left < right and bottom < top, got {tuple(window)}")
            n = view.near
            projection = frustum_matrix(left * n, right * n, bottom * n, top * n, n, view.far)
            intrinsics = window_intrinsics(view.width, view.height, (left, right, bottom, top))
        light = None
        if lighting is not None:
            light = {"lightDirection": list(lighting.direction), "lightColor": list(lighting.color),
                     "lightAmbientCoeff": lighting.ambient, "lightDiffuseCoeff": lighting.diffuse,
                     "lightSpecularCoeff": lighting.specular}
        rgb, depth = render_rgbd(self._cid, view.width, view.height, pose, projection, view.near, view.far, light)
        return CameraFrame(name=view.name, stamp=self.sim_time, rgb=rgb, depth=depth, intrinsics=intrinsics,
                           pose=pose, frame_id=f"{view.name}_optical_frame")

    # -------------------------------------------------- dynamics randomisation
    def _nominal_dynamics(self) -> List[Tuple[int, int, float, float]]:
        if self._dynamics_nominal is None:
            cid, out = self._cid, []
            for i in range(p.getNumBodies(physicsClientId=cid)):
                body = p.getBodyUniqueId(i, physicsClientId=cid)
                for link in range(-1, p.getNumJoints(body, physicsClientId=cid)):
                    info = p.getDynamicsInfo(body, link, physicsClientId=cid)
                    out.append((body, link, float(info[0]), float(info[1])))
            self._dynamics_nominal = out
        return self._dynamics_nominal

    def dynamics_bodies(self) -> Tuple[str, ...]:
        """Every PyBullet body in id order: the ground plane, static furniture, objects, robots."""
        self._check_loaded()
        return tuple(self._body_names[b] for b in sorted({b for b, *_ in self._nominal_dynamics()}))

    def set_dynamics_scale(self, mass: Mapping[str, float], friction: Mapping[str, float]) -> None:
        self._check_loaded()
        nominal = self._nominal_dynamics()
        ids = {self._body_names[b]: b for b, *_ in nominal}
        mass_f, friction_f = check_dynamics_scale(ids, mass, friction)
        cid = self._cid
        for body, link, m, mu in nominal:
            kw = {"lateralFriction": mu * friction_f.get(body, 1.0)}
            if m > 0:  # static links stay static
                kw["mass"] = m * mass_f.get(body, 1.0)
            p.changeDynamics(body, link, physicsClientId=cid, **kw)

    def set_object_velocity(self, name: str, linear: Sequence[float],
                            angular: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        self._check_loaded()
        if name not in self._objects:
            raise ValueError(f"unknown object '{name}'; objects: {', '.join(sorted(self._objects))}")
        p.resetBaseVelocity(self._objects[name].body, list(map(float, linear)), list(map(float, angular)),
                            physicsClientId=self._cid)

    # ------------------------------------------------------ poses and contacts
    def body_pose(self, name: str) -> Pose:
        self._check_loaded()
        if name in self._objects:
            return self.ground_truth()[name].pose
        for robot in self._robots:
            if name == robot.spec.name:
                return Pose(*self._link_pose(robot, next(iter(robot.links))))
            if name in robot.links:
                return Pose(*self._link_pose(robot, name))
        raise ValueError(f"unknown body '{name}': not an object, a robot or a robot link of the scene")

    def robot_base_pose(self, robot: Optional[str] = None) -> Pose:
        self._check_loaded()
        if not self._robots:
            raise ValueError(f"scene '{self.scene_name}' has no robot")
        if robot is None:
            chosen = self._mobile or self._robots[0]
        else:
            chosen = next((r for r in self._robots if r.spec.name == robot), None)
            if chosen is None:
                raise ValueError(f"unknown robot '{robot}'; robots: {[r.spec.name for r in self._robots]}")
        return Pose(*self._link_pose(chosen, next(iter(chosen.links))))

    def robot_contacts(self) -> List[str]:
        self.require(Capability.BASE_VELOCITY)
        robot = self._mobile.body
        out = set()
        for c in p.getContactPoints(bodyA=robot, physicsClientId=self._cid):
            other = c[2]
            name = self._body_names.get(other, f"body{other}")
            if other != robot and name != GROUND_PLANE:
                out.add(name)
        return sorted(out)

    # ------------------------------------------------------- visual randomisation
    def _visual_shapes(self):
        cid = self._cid
        for body in sorted(self._body_names):
            for k, shape in enumerate(p.getVisualShapeData(body, physicsClientId=cid)):
                yield (self._body_names[body], k), body, shape

    def visual_colors(self) -> Dict[Tuple[str, int], Tuple[float, float, float, float]]:
        self._check_loaded()
        return {key: tuple(float(c) for c in shape[7]) for key, _, shape in self._visual_shapes()}

    def set_visual_colors(self, colors: Mapping[Tuple[str, int], Sequence[float]]) -> None:
        self._check_loaded()
        shapes = {key: (body, shape[1]) for key, body, shape in self._visual_shapes()}
        unknown = [k for k in colors if k not in shapes]
        if unknown:
            raise KeyError(f"unknown visual shape(s) {unknown}; known: {sorted(shapes)}")
        for key, rgba in colors.items():
            body, link = shapes[key]
            p.changeVisualShape(body, link, rgbaColor=[float(c) for c in rgba], physicsClientId=self._cid)

    # ----------------------------------------------------------- ground truth
    def link_transforms(self) -> List[LinkTransform]:
        cid = self._cid
        out: List[LinkTransform] = []
        for robot in self._robots:
            names = {index: name for name, index in robot.links.items()}
            indices = sorted(i for i in names if i >= 0)
            world = {-1: self._link_pose(robot, names[-1])}
            if robot.spec.fixed_base:
                out.append(LinkTransform("world", names[-1], Pose(*world[-1])))
            # One batched call: URDF link frames (entries 4 and 5), not the inertial frames.
            for index, st in zip(indices, p.getLinkStates(robot.body, indices, computeForwardKinematics=1,
                                                          physicsClientId=cid)):
                world[index] = (st[4], st[5])
            for index in indices:
                parent = robot.link_parents[index]
                inv_pos, inv_orn = p.invertTransform(*world[parent])
                pos, orn = p.multiplyTransforms(inv_pos, inv_orn, *world[index])
                out.append(LinkTransform(names[parent], names[index], Pose(pos, orn)))
        return out

    def set_object_pose(self, name: str, pose: Pose) -> None:
        self._check_loaded()
        if name not in self._objects:
            raise ValueError(f"unknown object '{name}'; objects: {', '.join(sorted(self._objects))}")
        values = list(pose.position) + list(pose.orientation)
        if not all(math.isfinite(float(v)) for v in values):
            raise ValueError(f"pose of '{name}' is not finite: {values}")
        obj = self._objects[name]
        p.resetBasePositionAndOrientation(obj.body, *self._link_to_com(obj, pose), physicsClientId=self._cid)
        p.resetBaseVelocity(obj.body, (0, 0, 0), (0, 0, 0), physicsClientId=self._cid)
        p.changeDynamics(obj.body, -1, activationState=p.ACTIVATION_STATE_WAKE_UP, physicsClientId=self._cid)

    def spawnable_kinds(self) -> Tuple[str, ...]:
        self._check_loaded()
        return tuple(spawn_templates(self._spec.objects))

    def spawn_object(self, name: str, kind: str, pose: Pose) -> None:
        self._check_loaded()
        templates = spawn_templates(self._spec.objects)
        check_spawn(name, kind, pose, self.ground_truth(), templates)
        self._build_object(spawned_spec(templates[kind], name, pose))
        self._scene_edited = True

    def delete_object(self, name: str) -> None:
        self._check_loaded()
        check_delete(name, self._objects)
        body = self._objects.pop(name).body
        p.removeBody(body, physicsClientId=self._cid)
        self._body_names.pop(body, None)
        if self._dynamics_nominal is not None:
            self._dynamics_nominal = [entry for entry in self._dynamics_nominal if entry[0] != body]
        self._scene_edited = True

    def ground_truth(self) -> Dict[str, ObjectState]:
        self._check_loaded()
        cid = self._cid
        out: Dict[str, ObjectState] = {}
        for name, obj in self._objects.items():
            pos, orn = p.getBasePositionAndOrientation(obj.body, physicsClientId=cid)
            if obj.com_to_link != _IDENTITY:
                pos, orn = p.multiplyTransforms(pos, orn, *obj.com_to_link)
            lin, ang = p.getBaseVelocity(obj.body, physicsClientId=cid)
            s = obj.spec
            out[name] = ObjectState(name, Pose(pos, orn), Twist(lin, ang), s.shape, s.color_name, tuple(s.size),
                                    s.kind)
        for robot in self._robots:
            for name, (link, shape, color, size) in robot.spec.link_objects.items():
                st = p.getLinkState(robot.body, robot.links[link], computeLinkVelocity=1, computeForwardKinematics=1,
                                    physicsClientId=cid)
                # centre of mass pose: the geometric centre for these links
                out[name] = ObjectState(name, Pose(st[0], st[1]), Twist(st[6], st[7]), shape, color, tuple(size))
        return out

    def static_occupancy(self) -> List[OccupancyBox]:
        self.require(Capability.STATIC_OCCUPANCY)
        return list(self._spec.occupancy)

    # ------------------------------------------------- optional robot features
    def set_end_effector_delta(self, dx: float, dy: float, dz: float) -> None:
        """Move the grasp point by ``(dx, dy, dz)`` metres in the arm base frame.

        The target orientation keeps the gripper pointing down. IK solutions are
        clipped to the joint limits (unlike ``set_joint_targets``, the caller did
        not choose the joint values, so clipping is the only sensible policy).
        """
        self.require(Capability.END_EFFECTOR_DELTA)
        delta = np.array([dx, dy, dz], dtype=np.float64)
        if not np.all(np.isfinite(delta)):
            raise ValueError(f"end-effector delta must be finite, got {delta.tolist()}")
        self._solve_end_effector(delta)

    def set_end_effector_step_period(self, period_s: Optional[float]) -> None:
        self.require(Capability.END_EFFECTOR_DELTA)
        self._ee_step_physics_steps = physics_steps_per_ee_step(period_s, self._physics_rate_hz)

    def _ee_step_length(self) -> int:
        """Physics steps an end-effector step is spread over (one control period unless set)."""
        return self._ee_step_physics_steps or max(1, self._substeps)

    def set_end_effector_yaw(self, yaw: float) -> None:
        """Latch the wrist yaw (see the contract) and turn the last arm joint to it, the others held."""
        self.require(Capability.END_EFFECTOR_DELTA)
        yaw = float(yaw)
        if not (math.isfinite(yaw) and abs(yaw) <= math.pi / 2 + 1e-9):
            raise ValueError(f"end-effector yaw must be finite and within +-pi/2 rad, got {yaw}")
        cid, robot = self._cid, self._arm
        arm = robot.spec.arm
        # The last arm joint rolls the gripper about its own axis, which points down through the
        # grasp point: turning that joint alone turns the gripper in place. (An IK solve to the
        # turned orientation swings the whole arm on the way and the grasp point wanders ~15 cm.)
        turn = yaw - self._measured_ee_yaw()
        names = list(arm.joints)
        positions = [s[0] for s in p.getJointStates(robot.body, [robot.joints[n].index for n in names],
                                                    physicsClientId=cid)]
        wrist = robot.joints[names[-1]]
        positions[-1] = min(max(positions[-1] + WRIST_SIGN * turn, wrist.lower), wrist.upper)
        self._ee_yaw = yaw
        self._position_control(robot.body, [robot.joints[n] for n in names[:-1]], positions[:-1])
        # at a bounded speed: the light wrist under a bare position motor overshoots a large turn
        # by 40 deg and rings for seconds
        p.setJointMotorControl2(robot.body, wrist.index, p.POSITION_CONTROL, targetPosition=positions[-1],
                                force=wrist.max_force, maxVelocity=WRIST_TURN_SPEED, physicsClientId=cid)

    def _measured_ee_yaw(self) -> float:
        """The gripper's yaw about the arm base's z now, relative to the straight-down pose."""
        robot = self._arm
        arm = robot.spec.arm
        _, base_orn = self._link_pose(robot, arm.base_link)
        _, ee_orn = self._link_pose(robot, arm.ee_link)
        _, rel = p.multiplyTransforms((0, 0, 0), p.invertTransform((0, 0, 0), base_orn)[1], (0, 0, 0), ee_orn)
        _, turn = p.multiplyTransforms((0, 0, 0), rel, (0, 0, 0), p.invertTransform((0, 0, 0), arm.ee_down)[1])
        m = quat_to_matrix(turn)
        return math.atan2(m[1, 0], m[0, 0])

    def _solve_end_effector(self, delta: np.ndarray) -> None:
        cid, robot = self._cid, self._arm
        arm = robot.spec.arm
        base_pos, base_orn = self._link_pose(robot, arm.base_link)
        ee_pos = p.getLinkState(robot.body, robot.links[arm.ee_link], computeForwardKinematics=1,
                                physicsClientId=cid)[4]
        target = np.asarray(ee_pos) + quat_to_matrix(base_orn) @ delta
        # straight down, turned about the arm base's z by the latched wrist yaw
        turn = (0.0, 0.0, math.sin(self._ee_yaw / 2), math.cos(self._ee_yaw / 2))
        _, down = p.multiplyTransforms((0, 0, 0), turn, (0, 0, 0), arm.ee_down)
        _, target_orn = p.multiplyTransforms((0, 0, 0), base_orn, (0, 0, 0), down)
        joints = list(robot.joints.values())
        current = [s[0] for s in p.getJointStates(robot.body, robot.joint_indices, physicsClientId=cid)]
        # PyBullet's IK takes every movable joint of the body. Joints that do not move the end
        # effector (a mobile base's wheels) get a window around where they are: a continuous
        # wheel joint accumulates its angle while driving (150 rad after 12 m), and fixed
        # +-2 pi limits with a rest pose outside them cripple the null-space solution (the
        # arm then moves a tenth of each commanded step).
        moves_ee = set(arm.joints)
        # The null space pulls towards the rest pose; a turned wrist has its rest turned with it
        # (the last arm joint rolls the gripper about its own axis, which points down), or the
        # pull fights the yaw and the grasp point wanders.
        wrist = arm.joints[-1]
        lower, upper, rest = [], [], []
        for i, j in enumerate(joints):
            if j.name in moves_ee:
                lower.append(j.lower if math.isfinite(j.lower) else -2 * math.pi)
                upper.append(j.upper if math.isfinite(j.upper) else 2 * math.pi)
                rest.append(robot.spec.initial_positions.get(j.name, current[i])
                            + (WRIST_SIGN * self._ee_yaw if j.name == wrist else 0.0))
            else:
                lower.append(current[i] - math.pi)
                upper.append(current[i] + math.pi)
                rest.append(current[i])
        solution = p.calculateInverseKinematics(
            robot.body,
            robot.links[arm.ee_link],
            target.tolist(),
            target_orn,
            lowerLimits=lower,
            upperLimits=upper,
            jointRanges=[hi - lo for lo, hi in zip(lower, upper)],
            restPoses=rest,
            maxNumIterations=50,
            residualThreshold=1e-5,
            physicsClientId=cid,
        )
        order = {j.name: i for i, j in enumerate(joints)}
        arm_joints = [robot.joints[n] for n in arm.joints]
        targets = [min(max(solution[order[j.name]], j.lower), j.upper) for j in arm_joints]
        # The new targets are reached in equal parts over one control period, as a robot's joint
        # controller interpolates its setpoints, not in one jump: a jump drives each joint at its
        # full torque for a few milliseconds, and those jolts (every step) rocked the robot (40 kg
        # then) onto one wheel and walked the base ~1.4 cm and ~1 deg per arm move, unseen by wheel
        # odometry (tools/arm_base_shift.py --jump --base-mass 20).
        indices = [j.index for j in arm_joints]
        ramp = self._arm_ramp
        if ramp is not None and ramp.body == robot.body and ramp.indices == indices:
            start = ramp.current    # chain on from where the last step's interpolation got to
        else:
            start = np.array([s[0] for s in p.getJointStates(robot.body, indices, physicsClientId=cid)])
        self._arm_ramp = _ArmRamp(robot.body, indices, [j.max_force for j in arm_joints], start,
                                  np.asarray(targets, dtype=np.float64), self._ee_step_length())

    def _link_pose(self, robot: _Robot, link: str):
        index = robot.links[link]
        if index == -1:
            pos, orn = p.getBasePositionAndOrientation(robot.body, physicsClientId=self._cid)
            info = p.getDynamicsInfo(robot.body, -1, physicsClientId=self._cid)
            return p.multiplyTransforms(pos, orn, *p.invertTransform(info[3], info[4]))
        st = p.getLinkState(robot.body, index, computeForwardKinematics=1, physicsClientId=self._cid)
        return st[4], st[5]

    def set_gripper(self, open: bool) -> None:  # noqa: A002
        self.require(Capability.GRIPPER)
        robot = self._arm
        arm = robot.spec.arm
        width = arm.finger_open if open else arm.finger_closed
        joints = [robot.joints[n] for n in arm.finger_joints]
        p.setJointMotorControlArray(
            robot.body,
            [j.index for j in joints],
            p.POSITION_CONTROL,
            targetPositions=[width] * len(joints),
            forces=[arm.finger_force] * len(joints),
            physicsClientId=self._cid,
        )

    def gripper_contacts(self) -> List[str]:
        robot = self._arm
        if robot is None or robot.spec.arm is None:
            return []
        cid = self._cid
        names = {o.body: name for name, o in self._objects.items()}
        names.update({r.body: r.spec.name for r in self._robots})

        def where(body: int, link: int) -> str:
            what = names.get(body) or p.getBodyInfo(body, physicsClientId=cid)[1].decode() or f"body {body}"
            if link >= 0:
                what += "/" + p.getJointInfo(body, link, physicsClientId=cid)[12].decode()
            return what

        # contact points and normals in the grasp frame (the arm's ee link): the same numbers whichever
        # way the robot faces
        grasp_pos, grasp_orn = self._link_pose(robot, robot.spec.arm.ee_link)
        inv_pos, inv_orn = p.invertTransform(grasp_pos, grasp_orn)

        def in_grasp(point, direction=False):
            if direction:
                return p.multiplyTransforms([0, 0, 0], inv_orn, point, [0, 0, 0, 1])[0]
            return p.multiplyTransforms(inv_pos, inv_orn, point, [0, 0, 0, 1])[0]

        lines = []
        for joint in robot.spec.arm.finger_joints:
            link = robot.joints[joint].index
            for c in p.getContactPoints(bodyA=robot.body, linkIndexA=link, physicsClientId=cid):
                at = ", ".join(f"{v * 1000:+.1f}" for v in in_grasp(c[5]))
                normal = ", ".join(f"{v:+.2f}" for v in in_grasp(c[7], direction=True))
                lines.append(f"{where(c[1], c[3])} touches {where(c[2], c[4])}: normal force {c[9]:.1f} N, "
                             f"distance {c[8] * 1000:+.1f} mm, at ({at}) mm and normal on B ({normal}) in the "
                             f"grasp frame, friction {c[10]:.1f} / {c[12]:.1f} N")
        if self._finger_gear is not None:
            forces = p.getConstraintState(self._finger_gear, physicsClientId=cid)
            lines.append("finger coupling: " + ", ".join(f"{v:+.1f}" for v in forces))
        return lines

    def set_cart_force(self, force: float) -> None:
        """Latched horizontal force on the cart (N, +x).

        Implemented as a velocity motor chasing an unreachable speed with its
        force limit set to ``|force|``: the solver then applies exactly that
        force every physics step, without a Python call per step (a torque
        command in PyBullet only lasts one ``stepSimulation``).
        """
        self.require(Capability.CART_FORCE)
        robot = self._cart
        limit = robot.spec.cart_max_force
        if not math.isfinite(force) or abs(force) > limit:
            raise ValueError(f"cart force must be finite and within +-{limit} N, got {force}")
        p.setJointMotorControl2(
            robot.body,
            robot.joints[robot.spec.cart_joint].index,
            p.VELOCITY_CONTROL,
            targetVelocity=math.copysign(_FORCE_MODE_SPEED, force),
            force=abs(float(force)),
            physicsClientId=self._cid,
        )

    def set_plate_angles(self, pitch: float, roll: float) -> None:
        """Plate tilt targets; raises ``ValueError`` beyond the +-0.25 rad limits."""
        self.require(Capability.PLATE_ANGLES)
        self.set_joint_targets(self._plate.spec.plate_joints, [pitch, roll])

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            p.disconnect(physicsClientId=self._cid)
        except p.error:  # already gone (e.g. GUI window closed)
            pass
        self._cleanup_tmpdir()
        self._clear_scene()

    def _cleanup_tmpdir(self) -> None:
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __del__(self) -> None:  # best effort; prefer close() / the context manager
        try:
            self.close()
        except Exception:
            pass

