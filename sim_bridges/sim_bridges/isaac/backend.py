"""Isaac Sim 5.1 implementation of :class:`sim_bridges.contract.SimBackend`: **never run**.

Isaac Sim cannot be installed on the project's machines (docs: ``sim_bridges/README.md``, Isaac Sim),
so this module has never executed against Isaac Sim. It is written against Isaac Sim 5.1's Python
API (``isaacsim.core.api.World``, ``isaacsim.core.prims.SingleArticulation``,
``isaacsim.core.api.objects``, ``isaacsim.sensors.camera.Camera``, the URDF importer's
``URDFCreateImportConfig`` / ``URDFParseAndImportFile`` commands) and builds worlds from the same
``SceneSpec``/``RobotSpec`` as the other backends. Every ``isaacsim``/``omni``/``pxr`` import is
inside a method: importing this module needs numpy only. The convention-dependent arithmetic is in
:mod:`sim_bridges.isaac.conversions` and is unit-tested everywhere; nothing below is.

Run it inside Isaac Sim's Python through :mod:`sim_bridges.isaac.launcher`, which starts
``SimulationApp`` (headless) before any other Isaac import and then the bridge node.

Not written: end-effector deltas (no IK here; Isaac's Lula kinematics solver needs a robot
description file the project does not have) -> ``NotSupported``; ``gripper_contacts`` (empty list).
"""

from __future__ import annotations

import math
import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..backend_base import BackendBase
from ..contract import (
    CameraFrame,
    Capability,
    JointLimit,
    JointState,
    LinkTransform,
    NotSupported,
    ObjectState,
    OccupancyBox,
    Odometry,
    Pose,
    Twist,
)
from ..scenes import make_scene
from ..scenes.spec import SceneSpec
from .conversions import (
    JointOrder,
    body_twist,
    intrinsics_from_usd_camera,
    object_prim_args,
    quat_wxyz_to_xyzw,
    quat_xyzw_to_wxyz,
    relative_pose,
    require_isaacsim,
    usd_camera_params,
    wheel_velocity_targets,
)

__all__ = ["IsaacSimBackend"]

_WORLD = "/World"


def _movable_joints(robot: Any) -> Tuple[str, ...]:
    """The robot's movable joints in URDF order (the contract's ``joint_names``)."""
    import xml.etree.ElementTree as ET

    text = robot.urdf_text if robot.urdf_text is not None else open(robot.urdf_path, encoding="utf-8").read()
    return tuple(j.get("name") for j in ET.fromstring(text).iter("joint") if j.get("type") != "fixed")


class IsaacSimBackend(BackendBase):
    """Isaac Sim 5.1 behind the contract (headless; CPU PhysX for determinism). **Never run.**

    :raises RuntimeError: one line when Isaac Sim is not importable (:func:`require_isaacsim`)
    """

    #: why the contract's optional views (render_view, dynamics, body poses, contacts, colours) raise
    unimplemented_reason = ("not implemented on Isaac Sim: this backend is never run here, and an untested "
                            "implementation would only look like one")

    def __init__(self, physics_rate_hz: float = 240.0, control_rate_hz: float = 60.0, gui: bool = False) -> None:
        require_isaacsim()
        if gui:
            raise ValueError("the isaac backend runs headless here; start Isaac Sim's own app for a GUI")
        self._init_rates(physics_rate_hz, control_rate_hz)
        self._world: Any = None
        self._spec: Optional[SceneSpec] = None
        self._caps: frozenset = frozenset()
        self._robot: Any = None            # SingleArticulation
        self._robot_spec: Any = None
        self._robot_prim = ""
        self._order: Optional[JointOrder] = None
        self._objects: Dict[str, Any] = {}
        self._cameras: Dict[str, Tuple[Any, Any]] = {}   # name -> (CameraSpec, Camera)
        self._link_prims: Dict[str, str] = {}             # URDF link -> prim path
        self._physics_steps = 0
        self._closed = False

    # ------------------------------------------------------------------ scene
    def load_scene(self, name: str, **options: Any) -> None:
        seed = options.pop("seed", 0)
        try:
            spec = make_scene(name, **options)
        except TypeError as exc:
            raise ValueError(f"bad options for scene '{name}': {exc}") from None
        if len(spec.robots) != 1:
            raise ValueError(f"isaac backend: scene '{spec.name}' has {len(spec.robots)} robots; one is supported")
        self._build(spec)
        self.reset(seed)

    def _build(self, spec: SceneSpec) -> None:
        from isaacsim.core.api import World
        from isaacsim.core.api import objects as iobj
        from isaacsim.core.prims import SingleArticulation

        if self._world is not None:
            self._world.clear()
        self._world = world = World(physics_dt=1.0 / self._physics_rate_hz,
                                    rendering_dt=self._substeps / self._physics_rate_hz,
                                    stage_units_in_meters=1.0, backend="numpy", device="cpu")
        world.get_physics_context().set_gravity(-spec.gravity)
        if spec.ground_plane:
            world.scene.add_default_ground_plane()
        robot = spec.robots[0]
        self._robot_prim = self._import_urdf(robot)
        self._robot = world.scene.add(SingleArticulation(prim_path=self._robot_prim, name=robot.name))
        self._robot_spec = robot
        self._objects = {}
        for obj in spec.static:
            cls, kwargs = object_prim_args(obj, f"{_WORLD}/static/{obj.name}")
            world.scene.add(getattr(iobj, cls)(**kwargs))
        for obj in spec.objects:
            cls, kwargs = object_prim_args(obj, f"{_WORLD}/objects/{obj.name}")
            self._objects[obj.name] = (obj, world.scene.add(getattr(iobj, cls)(**kwargs)))
        self._link_prims = self._find_link_prims()
        self._cameras = {}
        for cam in spec.all_cameras:
            self._cameras[cam.name] = (cam, self._add_camera(cam))
        world.reset()   # initialises the articulation (dof_names, physics handles) and the cameras
        self._order = JointOrder(_movable_joints(robot), self._robot.dof_names)   # the contract's order: the URDF's
        self._set_drives(robot)
        for _, camera in self._cameras.values():
            camera.initialize()
            camera.add_distance_to_image_plane_to_frame()
        self._spec = spec
        self._caps = frozenset(spec.capabilities - {Capability.END_EFFECTOR_DELTA})

    def _import_urdf(self, robot: Any) -> str:
        import omni.kit.commands

        path = robot.urdf_path
        if path is None:   # generated URDF (the mobile manipulator): the importer reads files only
            import tempfile

            with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
                f.write(robot.urdf_text)
                path = f.name
        _, config = omni.kit.commands.execute("URDFCreateImportConfig")
        config.merge_fixed_joints = False      # every URDF link stays a prim (link_transforms, cameras)
        config.fix_base = bool(robot.fixed_base)
        config.import_inertia_tensor = bool(robot.inertia_from_file)
        config.make_default_prim = False
        config.self_collision = False
        config.distance_scale = 1.0
        _, prim_path = omni.kit.commands.execute("URDFParseAndImportFile", urdf_path=path, import_config=config,
                                                 get_articulation_root=True)
        from isaacsim.core.utils.prims import get_prim_at_path
        from pxr import UsdGeom

        prim = get_prim_at_path(prim_path)
        xf = UsdGeom.XformCommonAPI(prim)
        x, y, z = (float(v) for v in robot.base_pose.position)
        xf.SetTranslate((x, y, z))
        # base yaw/roll/pitch: the shipped robots stand upright; a rotated base_pose needs an orient op
        return str(prim_path)

    def _set_drives(self, robot: Any) -> None:
        """PhysX joint drives for what each joint is: position servos keep the importer's gains;
        passive joints and the cart (force-driven) get none; wheels a velocity drive (kd only),
        torque-limited as in the other backends."""
        ctrl = self._robot.get_articulation_controller()
        kps, kds = (np.array(g, dtype=np.float64) for g in ctrl.get_gains())
        free = list(robot.passive_joints) + ([robot.cart_joint] if robot.cart_joint else [])
        for name in free:
            i = self._robot.get_dof_index(name)
            kps[i] = kds[i] = 0.0
        if robot.diff_drive is not None:
            dd = robot.diff_drive
            for name in (dd.left_wheel_joint, dd.right_wheel_joint):
                i = self._robot.get_dof_index(name)
                kps[i], kds[i] = 0.0, dd.wheel_torque / 0.5   # full torque 0.5 rad/s off the commanded speed
        ctrl.set_gains(kps=kps, kds=kds)

    def _find_link_prims(self) -> Dict[str, str]:
        """URDF link name -> prim path: the importer names each link's Xform after the link."""
        from isaacsim.core.utils.stage import get_current_stage
        from pxr import UsdPhysics

        stage = get_current_stage()
        root = self._robot_prim.rsplit("/", 1)[0] if self._robot_prim.count("/") > 2 else self._robot_prim
        out: Dict[str, str] = {}
        for prim in stage.Traverse():
            path = str(prim.GetPath())
            if path.startswith(root) and prim.HasAPI(UsdPhysics.RigidBodyAPI):
                out.setdefault(prim.GetName(), path)
        return out

    def _add_camera(self, cam: Any) -> Any:
        from isaacsim.sensors.camera import Camera

        parent = _WORLD if cam.link is None else self._link_prims[cam.link]
        camera = Camera(prim_path=f"{parent}/{cam.name}", name=cam.name, resolution=(cam.width, cam.height))
        # the spec's pose is the optical frame in its parent: camera_axes="ros" takes exactly that
        camera.set_local_pose(translation=np.asarray(cam.pose.position),
                              orientation=quat_xyzw_to_wxyz(cam.pose.orientation), camera_axes="ros")
        p = usd_camera_params(cam)
        prim = camera.prim
        prim.GetAttribute("focalLength").Set(p["focal_length"])
        prim.GetAttribute("horizontalAperture").Set(p["horizontal_aperture"])
        prim.GetAttribute("verticalAperture").Set(p["vertical_aperture"])
        camera.set_clipping_range(*p["clipping_range"])
        return camera

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int) -> None:
        self._check_loaded()
        seed = operator.index(seed)
        self._world.reset()
        rng = np.random.default_rng(seed)
        robot = self._robot_spec
        state = {n: (float(robot.initial_positions.get(n, 0.0)), 0.0) for n in self._order.contract_names}
        if robot.sample_initial_state is not None:
            state.update(robot.sample_initial_state(rng))
        names = list(self._order.contract_names)
        pos = np.array([state[n][0] for n in names])
        vel = np.array([state[n][1] for n in names])
        idx = self._order.sim_indices
        self._robot.set_joint_positions(pos, joint_indices=idx)
        self._robot.set_joint_velocities(vel, joint_indices=idx)
        self._hold(robot.position_joints, [state[n][0] for n in robot.position_joints])
        poses = self._spec.sample_object_poses(rng) if self._spec.sample_object_poses else {}
        for name, (obj, prim) in self._objects.items():
            pose = poses.get(name, obj.pose)
            prim.set_world_pose(position=np.asarray(pose.position), orientation=quat_xyzw_to_wxyz(pose.orientation))
            prim.set_linear_velocity(np.zeros(3))
            prim.set_angular_velocity(np.zeros(3))
        self._physics_steps = 0

    def _hold(self, names: Sequence[str], positions: Sequence[float]) -> None:
        from isaacsim.core.utils.types import ArticulationAction

        if not names:
            return
        idx = np.array([self._robot.get_dof_index(n) for n in names])
        self._robot.apply_action(ArticulationAction(joint_positions=np.asarray(positions, dtype=np.float64),
                                                    joint_indices=idx))

    # ------------------------------------------------------------------- time
    def step(self, n_control_steps: int = 1) -> None:
        self._check_loaded()
        n = operator.index(n_control_steps)
        if n < 0:
            raise ValueError(f"n_control_steps must be >= 0, got {n}")
        for _ in range(n * self._substeps):
            self._world.step(render=False)   # one physics_dt; cameras render on demand
        self._physics_steps += n * self._substeps

    # ----------------------------------------------------------------- joints
    @property
    def joint_names(self) -> Tuple[str, ...]:
        return () if self._order is None else self._order.contract_names

    def joint_state(self) -> JointState:
        self._check_loaded()
        r, o = self._robot, self._order
        return JointState(o.contract_names, o.from_sim(r.get_joint_positions()), o.from_sim(r.get_joint_velocities()),
                          o.from_sim(r.get_applied_joint_efforts()))

    def joint_limits(self) -> Dict[str, JointLimit]:
        self._check_loaded()
        props = self._robot.dof_properties   # structured array in dof_names order (radians, m)
        out = {}
        for name in self._order.contract_names:
            i = self._robot.get_dof_index(name)
            lower, upper = float(props["lower"][i]), float(props["upper"][i])
            if not props["hasLimits"][i]:
                lower, upper = -math.inf, math.inf
            out[name] = JointLimit(lower, upper, float(props["maxVelocity"][i]))
        return out

    def set_joint_targets(self, names: Sequence[str], positions: Sequence[float]) -> None:
        self._check_loaded()
        controllable = set(self._robot_spec.position_joints)
        if not controllable:
            raise self._not_supported(Capability.JOINT_POSITION_CONTROL)
        names = list(names)
        targets = np.asarray(positions, dtype=np.float64)
        if targets.ndim != 1 or len(names) != targets.shape[0]:
            raise ValueError(f"got {len(names)} joint names but {targets.size} positions")
        if not np.all(np.isfinite(targets)):
            raise ValueError(f"joint targets must be finite, got {targets.tolist()}")
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate joint names in {names}")
        limits = self.joint_limits()
        for name, target in zip(names, targets):
            if name not in controllable:
                raise ValueError(f"joint '{name}' is not position-controlled; controllable: {sorted(controllable)}")
            lim = limits[name]
            if not lim.lower - 1e-9 <= target <= lim.upper + 1e-9:
                raise ValueError(f"target {target:.6g} for joint '{name}' outside limits "
                                 f"[{lim.lower:.6g}, {lim.upper:.6g}]")
        self._hold(names, targets)

    # ------------------------------------------------------------ mobile base
    def set_base_velocity(self, linear_x: float, angular_z: float) -> None:
        from isaacsim.core.utils.types import ArticulationAction

        self.require(Capability.BASE_VELOCITY)
        dd = self._robot_spec.diff_drive
        left, right = wheel_velocity_targets(float(linear_x), float(angular_z), dd)
        idx = np.array([self._robot.get_dof_index(dd.left_wheel_joint),
                        self._robot.get_dof_index(dd.right_wheel_joint)])
        self._robot.apply_action(ArticulationAction(joint_velocities=np.array([left, right]), joint_indices=idx))

    def base_odometry(self) -> Odometry:
        self.require(Capability.BASE_VELOCITY)
        position, q_wxyz = self._robot.get_world_pose()
        q = quat_wxyz_to_xyzw(q_wxyz)
        lin, ang = body_twist(q, self._robot.get_linear_velocity(), self._robot.get_angular_velocity())
        return Odometry(stamp=self.sim_time, pose=Pose(np.asarray(position, dtype=np.float64), q),
                        twist=Twist(lin, ang))

    # ---------------------------------------------------------------- cameras
    @property
    def camera_names(self) -> Tuple[str, ...]:
        return tuple(self._cameras)

    def camera_frame(self, name: str) -> CameraFrame:
        self._check_loaded()
        if name not in self._cameras:
            raise ValueError(f"unknown camera '{name}'; cameras: {list(self._cameras)}")
        cam, camera = self._cameras[name]
        self._world.render()
        rgba = camera.get_rgba()
        depth = np.asarray(camera.get_depth(), dtype=np.float32)   # distance_to_image_plane = optical z
        depth[~np.isfinite(depth) | (depth >= cam.far) | (depth <= 0)] = np.nan
        position, q_wxyz = camera.get_world_pose(camera_axes="ros")
        p = usd_camera_params(cam)
        k = intrinsics_from_usd_camera(cam.width, cam.height, p["focal_length"], p["horizontal_aperture"],
                                       p["vertical_aperture"])
        rgb = np.ascontiguousarray(rgba[:, :, :3]).astype(np.uint8)
        return CameraFrame(name=name, stamp=self.sim_time, rgb=rgb, depth=depth, intrinsics=k,
                           pose=Pose(np.asarray(position, dtype=np.float64), quat_wxyz_to_xyzw(q_wxyz)),
                           frame_id=f"{name}_optical_frame")

    def camera_spec(self, name: str) -> Any:
        self._check_loaded()
        if name not in self._cameras:
            raise ValueError(f"unknown camera '{name}'; cameras: {list(self._cameras)}")
        return self._cameras[name][0]

    def camera_pose(self, name: str) -> Pose:
        self.camera_spec(name)
        position, q_wxyz = self._cameras[name][1].get_world_pose(camera_axes="ros")
        return Pose(np.asarray(position, dtype=np.float64), quat_wxyz_to_xyzw(q_wxyz))

    # ----------------------------------------------------------- ground truth
    def _link_world_pose(self, path: str) -> Pose:
        from isaacsim.core.utils.xforms import get_world_pose

        position, q_wxyz = get_world_pose(path)
        return Pose(np.asarray(position, dtype=np.float64), quat_wxyz_to_xyzw(q_wxyz))

    def link_transforms(self) -> List[LinkTransform]:
        import xml.etree.ElementTree as ET

        self._check_loaded()
        robot = self._robot_spec
        text = robot.urdf_text if robot.urdf_text is not None else open(robot.urdf_path, encoding="utf-8").read()
        out = []
        for joint in ET.fromstring(text).iter("joint"):
            parent, child = joint.find("parent").get("link"), joint.find("child").get("link")
            if parent in self._link_prims and child in self._link_prims:
                out.append(LinkTransform(parent, child, relative_pose(self._link_world_pose(self._link_prims[parent]),
                                                                      self._link_world_pose(self._link_prims[child]))))
        if robot.fixed_base:
            root = next(iter(self._link_prims))
            out.insert(0, LinkTransform("world", root, self._link_world_pose(self._link_prims[root])))
        return out

    def ground_truth(self) -> Dict[str, ObjectState]:
        self._check_loaded()
        out = {}
        for name, (obj, prim) in self._objects.items():
            position, q_wxyz = prim.get_world_pose()
            out[name] = ObjectState(name, Pose(np.asarray(position, dtype=np.float64), quat_wxyz_to_xyzw(q_wxyz)),
                                    Twist(np.asarray(prim.get_linear_velocity(), dtype=np.float64),
                                          np.asarray(prim.get_angular_velocity(), dtype=np.float64)),
                                    obj.shape, obj.color_name, tuple(obj.size), obj.kind)
        return out

    def set_object_pose(self, name: str, pose: Pose) -> None:
        self._check_loaded()
        if name not in self._objects:
            raise ValueError(f"unknown object '{name}'; objects: {', '.join(sorted(self._objects))}")
        _, prim = self._objects[name]
        prim.set_world_pose(position=np.asarray(pose.position), orientation=quat_xyzw_to_wxyz(pose.orientation))
        prim.set_linear_velocity(np.zeros(3))
        prim.set_angular_velocity(np.zeros(3))

    def static_occupancy(self) -> List[OccupancyBox]:
        self.require(Capability.STATIC_OCCUPANCY)
        return list(self._spec.occupancy)

    # ------------------------------------------------- optional robot features
    def set_end_effector_delta(self, dx: float, dy: float, dz: float) -> None:
        raise NotSupported("end_effector_delta (no IK written for the isaac backend)", self.scene_name,
                           [str(c) for c in self._caps])

    def set_end_effector_yaw(self, yaw: float) -> None:
        self.set_end_effector_delta(0.0, 0.0, 0.0)

    def set_gripper(self, open: bool) -> None:  # noqa: A002
        self.require(Capability.GRIPPER)
        arm = self._robot_spec.arm
        width = arm.finger_open if open else arm.finger_closed
        self._hold(arm.finger_joints, [width] * len(arm.finger_joints))

    def set_cart_force(self, force: float) -> None:
        from isaacsim.core.utils.types import ArticulationAction

        self.require(Capability.CART_FORCE)
        limit = self._robot_spec.cart_max_force
        if not math.isfinite(force) or abs(force) > limit:
            raise ValueError(f"cart force must be finite and within +-{limit} N, got {force}")
        idx = np.array([self._robot.get_dof_index(self._robot_spec.cart_joint)])
        self._robot.apply_action(ArticulationAction(joint_efforts=np.array([float(force)]), joint_indices=idx))

    def set_plate_angles(self, pitch: float, roll: float) -> None:
        self.require(Capability.PLATE_ANGLES)
        self.set_joint_targets(self._robot_spec.plate_joints, [pitch, roll])

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._world is not None:
            self._world.clear()
            self._world = None
