"""Simulator-agnostic backend contract.

Everything a ROS bridge node, a training environment, a conformance test or a
benchmark needs from a physics simulator goes through :class:`SimBackend`.
Concrete simulators (PyBullet today, Isaac Sim later) implement it; callers
never touch simulator handles directly.

Conventions (all backends must follow them):

* SI units: metres, radians, seconds, kilograms, newtons.
* REP 103 frames: world/odom is x forward, y left, z up. Camera poses are the
  *optical* frame (z forward, x right, y down).
* Quaternions are ``(x, y, z, w)`` like ROS ``geometry_msgs``.
* Time is *simulation* time, advanced only by :meth:`SimBackend.step`.

The data types are frozen dataclasses holding read-only numpy arrays so that a
snapshot handed to a caller can never be mutated behind its back.
"""

from __future__ import annotations

import abc
import enum
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "Capability",
    "NotSupported",
    "Pose",
    "Twist",
    "JointState",
    "JointLimit",
    "Odometry",
    "CameraIntrinsics",
    "CameraFrame",
    "ObjectState",
    "OccupancyBox",
    "LinkTransform",
    "Lighting",
    "SimBackend",
    "physics_steps_per_control",
]


class NotSupported(NotImplementedError):
    """Raised when the loaded scene/robot lacks an optional capability.

    Subclasses :class:`NotImplementedError` so generic callers can catch it,
    but it carries the capability name and what *is* supported, which makes
    misconfigured training/bridge code fail with an actionable message.
    """

    def __init__(self, capability: str, scene: Optional[str], available: Sequence[str]) -> None:
        self.capability = capability
        self.scene = scene
        self.available = tuple(sorted(available))
        super().__init__(
            f"capability '{capability}' is not supported by scene '{scene}' "
            f"(supported: {', '.join(self.available) or 'none'})"
        )


class Capability(str, enum.Enum):
    """Optional features a loaded scene may provide (see ``SimBackend.capabilities``)."""

    JOINT_POSITION_CONTROL = "joint_position_control"
    BASE_VELOCITY = "base_velocity"
    END_EFFECTOR_DELTA = "end_effector_delta"
    GRIPPER = "gripper"
    CART_FORCE = "cart_force"
    PLATE_ANGLES = "plate_angles"
    CAMERA = "camera"
    STATIC_OCCUPANCY = "static_occupancy"

    def __str__(self) -> str:  # so f-strings print the plain value
        return self.value


def _ro(values: Any, shape: Optional[Tuple[int, ...]] = None, dtype: Any = np.float64) -> np.ndarray:
    """Copy ``values`` into a read-only numpy array (optionally checking its shape)."""
    arr = np.array(values, dtype=dtype)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"expected shape {shape}, got {arr.shape}")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class Pose:
    """Rigid pose: ``position`` (3,) in metres and ``orientation`` (4,) quaternion xyzw."""

    position: np.ndarray
    orientation: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.0, 1.0]))

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", _ro(self.position, (3,)))
        object.__setattr__(self, "orientation", _ro(self.orientation, (4,)))


@dataclass(frozen=True, eq=False)
class Twist:
    """Linear (m/s) and angular (rad/s) velocity, each (3,). The frame is stated by the owner."""

    linear: np.ndarray
    angular: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "linear", _ro(self.linear, (3,)))
        object.__setattr__(self, "angular", _ro(self.angular, (3,)))


@dataclass(frozen=True, eq=False)
class JointState:
    """Snapshot of the robot joints, same order as ``SimBackend.joint_names``.

    :param names: joint names
    :param position: rad (revolute) or m (prismatic)
    :param velocity: rad/s or m/s
    :param effort: applied motor torque (N m) or force (N)
    """

    names: Tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.names)
        object.__setattr__(self, "names", tuple(self.names))
        for attr in ("position", "velocity", "effort"):
            object.__setattr__(self, attr, _ro(getattr(self, attr), (n,)))


class JointLimit(NamedTuple):
    """Joint limits; unbounded (continuous) joints use ``-inf``/``inf``."""

    lower: float
    upper: float
    max_velocity: float


@dataclass(frozen=True, eq=False)
class Odometry:
    """Base odometry like ``nav_msgs/Odometry``.

    ``pose`` is ``child_frame_id`` expressed in ``frame_id``; ``twist`` is expressed
    in ``child_frame_id`` (the body frame), as in ROS.
    """

    stamp: float
    pose: Pose
    twist: Twist
    frame_id: str = "odom"
    child_frame_id: str = "base_link"


@dataclass(frozen=True)
class CameraIntrinsics:
    """Pinhole intrinsics in pixels (ROS ``CameraInfo`` convention).

    Pixel ``(u, v)`` (column, row) *centres* sit at integer coordinates, so a
    point ``(X, Y, Z)`` in the optical frame projects to
    ``u = fx * X / Z + cx`` and ``v = fy * Y / Z + cy``.
    """

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    @property
    def K(self) -> np.ndarray:  # noqa: N802 - standard name
        """3x3 camera matrix."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    @classmethod
    def from_vertical_fov(cls, width: int, height: int, vfov_rad: float) -> "CameraIntrinsics":
        """Square-pixel intrinsics for a vertical field of view (OpenGL-style projection)."""
        fy = 0.5 * height / math.tan(0.5 * vfov_rad)
        # OpenGL covers [0, W] x [0, H] in pixel *edges*; centres are at +0.5,
        # hence the -0.5 to express cx/cy in the centre-at-integer convention.
        return cls(width, height, fy, fy, 0.5 * width - 0.5, 0.5 * height - 0.5)


@dataclass(frozen=True, eq=False)
class CameraFrame:
    """One RGB-D image.

    :param name: camera name (``SimBackend.camera_names``)
    :param stamp: sim time in seconds when rendered
    :param rgb: ``uint8`` (H, W, 3)
    :param depth: ``float32`` (H, W) metric depth along the optical z axis (m);
        NaN where nothing was hit before the far plane
    :param intrinsics: pinhole model of both images (they are registered)
    :param pose: optical frame (z forward, x right, y down) in the world/odom frame
    :param frame_id: TF name of the optical frame
    """

    name: str
    stamp: float
    rgb: np.ndarray
    depth: np.ndarray
    intrinsics: CameraIntrinsics
    pose: Pose
    frame_id: str = ""


#: what people call an object built from a primitive shape (``ObjectSpec.kind``'s default)
PRIMITIVE_KINDS: Dict[str, str] = {"box": "cube", "sphere": "ball", "cylinder": "cylinder"}


@dataclass(frozen=True, eq=False)
class ObjectState:
    """Ground-truth state of a scene object (evaluation/training only).

    :param pose: world pose of the object's centre
    :param velocity: world-frame twist
    :param shape: ``'box'``, ``'sphere'``, ``'cylinder'`` or a robot-specific name
    :param color_name: e.g. ``'red'``
    :param size: full extents (x, y, z) in metres (sphere: diameter x3;
        cylinder: diameter, diameter, height; a mesh: its bounding box, centred on the pose)
    :param kind: what people call it ("cube", "duck", ...; the scene's ``ObjectSpec.kind``);
        default: the primitive's everyday name (box: cube, sphere: ball), else the shape
    """

    name: str
    pose: Pose
    velocity: Twist
    shape: str
    color_name: str
    size: Tuple[float, float, float]
    kind: str = ""

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", PRIMITIVE_KINDS.get(self.shape, self.shape))


@dataclass(frozen=True)
class OccupancyBox:
    """Axis-aligned 2-D footprint of static geometry (for map generation)."""

    name: str
    x_min: float
    x_max: float
    y_min: float
    y_max: float
    height: float


@dataclass(frozen=True, eq=False)
class LinkTransform:
    """One edge of a robot's kinematic tree: the ``child`` link frame in the ``parent`` link frame.

    Link names are the robot description's (URDF) link names, as a robot_state_publisher
    would publish them on /tf.
    """

    parent: str
    child: str
    pose: Pose


@dataclass(frozen=True)
class Lighting:
    """One directional light for :meth:`SimBackend.render_view` (image randomisation).

    :param direction: world-frame vector from the scene towards the light (its length is ignored
        by engines that only use the direction)
    :param color: light colour, RGB in [0, 1]
    :param ambient: ambient coefficient; ``diffuse`` and ``specular``: the other two Phong coefficients
    """

    direction: Tuple[float, float, float]
    color: Tuple[float, float, float] = (1.0, 1.0, 1.0)
    ambient: float = 0.6
    diffuse: float = 0.35
    specular: float = 0.05


def physics_steps_per_control(physics_rate_hz: float, control_rate_hz: float) -> int:
    """Number of physics steps per control step, validating divisibility.

    :raises ValueError: if ``control_rate_hz`` does not divide ``physics_rate_hz``
        (e.g. 240 Hz physics accepts 240, 120, 80, 60, 48, 40, 30, ... but not 50).
    """
    if not (math.isfinite(control_rate_hz) and control_rate_hz > 0):
        raise ValueError(f"control rate must be a positive finite number, got {control_rate_hz!r}")
    if control_rate_hz > physics_rate_hz:
        raise ValueError(
            f"control rate {control_rate_hz} Hz exceeds the physics rate {physics_rate_hz} Hz"
        )
    ratio = physics_rate_hz / control_rate_hz
    k = int(round(ratio))
    if abs(ratio - k) > 1e-9 * ratio:
        raise ValueError(
            f"control rate {control_rate_hz} Hz does not divide the physics rate "
            f"{physics_rate_hz} Hz; pick physics_rate_hz / k for an integer k"
        )
    return k


def physics_steps_per_ee_step(period_s: Optional[float], physics_rate_hz: float) -> Optional[int]:
    """Physics steps an end-effector step is spread over for ``set_end_effector_step_period``
    (``None``: one control period, which the backend supplies). Rounded, at least one.

    :raises ValueError: for a period that is not finite and positive
    """
    if period_s is None:
        return None
    period_s = float(period_s)
    if not (math.isfinite(period_s) and period_s > 0):
        raise ValueError(f"end-effector step period must be finite and > 0 s, got {period_s}")
    return max(1, int(round(period_s * physics_rate_hz)))


class SimBackend(abc.ABC):
    """Abstract simulator backend.

    Life cycle: construct -> :meth:`load_scene` -> :meth:`reset` -> loop of
    ``set_*`` commands and :meth:`step` -> :meth:`close`. Commands are latched:
    they stay active until replaced (like a hardware motor controller).

    Determinism: after ``reset(seed)`` the state depends only on the scene,
    its options and ``seed``; identical command sequences then produce
    identical trajectories.
    """

    # ----------------------------------------------------------------- scene
    @abc.abstractmethod
    def load_scene(self, name: str, **options: Any) -> None:
        """Build scene ``name`` (see ``sim_bridges.scenes.scene_names()``).

        :raises ValueError: for an unknown scene, listing the valid names
        """

    @property
    @abc.abstractmethod
    def scene_name(self) -> Optional[str]:
        """Name of the loaded scene, ``None`` before :meth:`load_scene`."""

    @property
    @abc.abstractmethod
    def capabilities(self) -> frozenset:
        """Set of :class:`Capability` values supported by the loaded scene."""

    @abc.abstractmethod
    def reset(self, seed: int) -> None:
        """Restore the initial state, randomised deterministically by ``seed``; sim time -> 0."""

    @abc.abstractmethod
    def step(self, n_control_steps: int = 1) -> None:
        """Advance ``n_control_steps`` control periods (each several physics steps)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release simulator resources. Safe to call twice."""

    # ------------------------------------------------------------------ time
    @property
    @abc.abstractmethod
    def sim_time(self) -> float:
        """Simulation time in seconds since the last reset."""

    @property
    @abc.abstractmethod
    def physics_rate_hz(self) -> float:
        """Fixed physics integration rate."""

    @property
    @abc.abstractmethod
    def control_period(self) -> float:
        """Duration of one control step (s); an integer multiple of the physics period."""

    @abc.abstractmethod
    def set_control_rate(self, control_rate_hz: float) -> None:
        """Change the control rate.

        :raises ValueError: if it does not divide :attr:`physics_rate_hz`
        """

    # ---------------------------------------------------------------- joints
    @property
    @abc.abstractmethod
    def joint_names(self) -> Tuple[str, ...]:
        """All movable joints of the robot(s), in :meth:`joint_state` order."""

    @abc.abstractmethod
    def joint_state(self) -> JointState:
        """Current joint positions, velocities and efforts."""

    def read_joint_state_into(self, position: np.ndarray, velocity: np.ndarray, effort: np.ndarray) -> None:
        """Write what :meth:`joint_state` reports into three writable float64 arrays of
        ``len(joint_names)`` (a batch's rows), without building a :class:`JointState`.

        Why: a batch bridge reads every env's joints on every call, and building the read-only
        snapshot cost more than the read itself. Backends may override it with a direct read; this
        default goes through :meth:`joint_state`, so both always agree.
        """
        js = self.joint_state()
        position[:] = js.position
        velocity[:] = js.velocity
        effort[:] = js.effort

    @abc.abstractmethod
    def joint_limits(self) -> Dict[str, JointLimit]:
        """``name -> (lower, upper, max_velocity)`` for every joint in :attr:`joint_names`."""

    @abc.abstractmethod
    def set_joint_targets(self, names: Sequence[str], positions: Sequence[float]) -> None:
        """Position-control the named joints.

        :raises ValueError: on length mismatch, NaN/inf, unknown or passive joint,
            or a target outside the joint limits (callers decide whether to clip)
        """

    # ------------------------------------------------------------ mobile base
    def set_base_velocity(self, linear_x: float, angular_z: float) -> None:
        """Differential-drive command (m/s, rad/s in ``base_link``), mapped to wheel speeds."""
        raise self._not_supported(Capability.BASE_VELOCITY)

    def base_odometry(self) -> Odometry:
        """Pose of ``base_link`` in ``odom`` and its body-frame twist."""
        raise self._not_supported(Capability.BASE_VELOCITY)

    # ---------------------------------------------------------------- cameras
    @property
    @abc.abstractmethod
    def camera_names(self) -> Tuple[str, ...]:
        """Cameras of the loaded scene (may be empty)."""

    @abc.abstractmethod
    def camera_frame(self, name: str) -> CameraFrame:
        """Render camera ``name`` now (rendering only happens on request).

        :raises ValueError: for an unknown camera name
        """

    # ----------------------------------------------------------- ground truth
    @abc.abstractmethod
    def ground_truth(self) -> Dict[str, ObjectState]:
        """Privileged object states, for evaluation and training rewards only."""

    def set_object_pose(self, name: str, pose: Pose) -> None:
        """Place a free object at ``pose`` (at rest), for evaluation set-ups such as a fetch layout.

        Call it after :meth:`reset`; the next reset undoes it. ``ValueError`` for an unknown object
        name or a non-finite pose. Optional: the default raises :class:`NotSupported`.
        """
        raise NotSupported("set_object_pose", self.scene_name, [])

    def spawnable_kinds(self) -> Tuple[str, ...]:
        """Object kinds :meth:`spawn_object` builds in the loaded scene: one per kind of free
        object the scene has ("cube", "ball", ...). Optional: the default is none."""
        return ()

    def spawn_object(self, name: str, kind: str, pose: Pose) -> None:
        """Add a free object of ``kind`` (a copy of the scene's first object of that kind) named
        ``name`` at ``pose``, at rest. It is an object like the scene's own (:meth:`ground_truth`,
        :meth:`set_object_pose`, :meth:`delete_object`) until the next :meth:`reset`, which restores
        the scene as loaded. ``ValueError`` (one line) for a taken or invalid name, a kind not in
        :meth:`spawnable_kinds` or a non-finite pose. Optional: the default raises :class:`NotSupported`.
        """
        raise NotSupported("spawn_object", self.scene_name, [])

    def delete_object(self, name: str) -> None:
        """Remove the free object ``name`` (the scene's own or a spawned one) until the next
        :meth:`reset`. ``ValueError`` for an unknown name. Optional: the default raises :class:`NotSupported`.
        """
        raise NotSupported("delete_object", self.scene_name, [])

    def static_occupancy(self) -> List[OccupancyBox]:
        """2-D footprints of the static geometry of the scene (walls, furniture)."""
        raise self._not_supported(Capability.STATIC_OCCUPANCY)

    @abc.abstractmethod
    def link_transforms(self) -> List[LinkTransform]:
        """Every robot link's pose relative to its parent link, for every robot in the scene.

        The URDF tree at the current joint positions: what robot_state_publisher computes from
        /joint_states. A fixed-base robot's root link is given relative to ``world``; a mobile
        robot's root (``base_link``) has no parent here: :meth:`base_odometry` places it.
        """

    # ------------------------------------- views and truth for trainers and evaluators
    # Optional: a backend that cannot offer one raises NotImplementedError saying why
    # (:meth:`_not_implemented`); the conformance suite checks each method on each engine.

    def camera_spec(self, name: str) -> Any:
        """The description of camera ``name`` (a ``sim_bridges.robots.spec.CameraSpec``: size,
        vertical field of view, clip planes, mount). ``ValueError`` for an unknown camera."""
        raise self._not_implemented("camera_spec")

    def camera_pose(self, name: str) -> Pose:
        """Current world pose of camera ``name``'s optical frame (what :meth:`camera_frame` would
        stamp), without rendering. ``ValueError`` for an unknown camera."""
        raise self._not_implemented("camera_pose")

    def render_view(self, view: Any, pose: Optional[Pose] = None, *,
                    window: Optional[Tuple[float, float, float, float]] = None,
                    lighting: Optional[Lighting] = None) -> CameraFrame:
        """Render RGB-D from a camera that need not be in the scene (snapshots, evaluators, a pixel
        task's crop window).

        :param view: a ``CameraSpec``: image size, vertical field of view, clip planes and name;
            a scene camera's (:meth:`camera_spec`) renders what that camera sees
        :param pose: optical-frame world pose; default: ``view.pose`` (a world-fixed view), or for
            a scene camera mounted on a link its current pose (:meth:`camera_pose`)
        :param window: ``(left, right, bottom, top)`` of the image plane at unit distance along the
            optical axis (x right, y up): an off-axis view of exactly that window, e.g. a crop of a
            camera rendered alone; ``None``: the centred window of ``view.vfov_rad``
        :param lighting: one directional light instead of the engine's default
        """
        raise self._not_implemented("render_view")

    def dynamics_bodies(self) -> Tuple[str, ...]:
        """Names of the bodies whose mass and friction :meth:`set_dynamics_scale` scales, in a fixed
        order (an engine's own grouping: PyBullet has one per simulated body, ground and static
        furniture included; MuJoCo one per free object and one for the robots together)."""
        raise self._not_implemented("dynamics_bodies")

    def set_dynamics_scale(self, mass: Mapping[str, float], friction: Mapping[str, float]) -> None:
        """Set every link's mass to ``nominal * mass[body]`` (links of zero mass stay static) and its
        sliding friction to ``nominal * friction[body]``; a body left out gets 1. Absolute: calls
        never compound, ``({}, {})`` restores the scene as built. Inertias stay nominal (as in
        PyBullet's ``changeDynamics``). Holds until the next call or :meth:`load_scene`.
        ``KeyError`` for a name not in :meth:`dynamics_bodies`, ``ValueError`` for a mass factor
        that is not finite and > 0 or a friction factor that is not finite and >= 0."""
        raise self._not_implemented("set_dynamics_scale")

    def set_object_velocity(self, name: str, linear: Sequence[float],
                            angular: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        """Set free object ``name``'s world-frame linear (m/s) and angular (rad/s) velocity now, for
        a task's initial state (e.g. a rolling ball). ``ValueError`` for an unknown object."""
        raise self._not_implemented("set_object_velocity")

    def body_pose(self, name: str) -> Pose:
        """World pose of ``name``: a free object (as :meth:`ground_truth`), a robot link (its URDF
        link frame) or a robot (its root link). Simulator truth for evaluators and task rewards.
        ``ValueError`` for an unknown name."""
        raise self._not_implemented("body_pose")

    def robot_base_pose(self, robot: Optional[str] = None) -> Pose:
        """World pose of robot ``robot``'s root link (default: the scene's mobile robot, else its
        first robot). Simulator truth for evaluators (``odom`` is the world in the sim)."""
        raise self._not_implemented("robot_base_pose")

    def robot_contacts(self) -> List[str]:
        """Names of what the mobile robot touches now (free objects by name, static furniture by its
        scene name), the ground excluded, sorted: an evaluator's collision check. Simulator truth."""
        raise self._not_implemented("robot_contacts")

    def visual_colors(self) -> Dict[Tuple[str, int], Tuple[float, float, float, float]]:
        """RGBA of every visual shape of the scene, keyed by ``(body name, shape index)``, for image
        randomisation (:meth:`set_visual_colors`)."""
        raise self._not_implemented("visual_colors")

    def set_visual_colors(self, colors: Mapping[Tuple[str, int], Sequence[float]]) -> None:
        """Recolour the visual shapes named by ``colors`` (keys of :meth:`visual_colors`, RGBA in
        [0, 1]). Visual only: physics never changes. ``KeyError`` for an unknown key."""
        raise self._not_implemented("set_visual_colors")

    # ------------------------------------------------- optional robot features
    def set_end_effector_delta(self, dx: float, dy: float, dz: float) -> None:
        """Move the arm end effector by a Cartesian delta (m, arm base frame) via IK.

        The gripper points down, turned about the arm base's vertical by the wrist yaw last set
        with :meth:`set_end_effector_yaw` (0 after a reset). The joints move to the IK solution
        over the next control period, their targets interpolated at the physics rate as a robot's
        joint controller interpolates its setpoints (a jump to the new targets jolts the arm at
        full torque, and on a mobile base those jolts move the base)."""
        raise self._not_supported(Capability.END_EFFECTOR_DELTA)

    def set_end_effector_step_period(self, period_s: Optional[float]) -> None:
        """Spread each end-effector step over ``period_s`` seconds of sim time instead of one control
        period (``None``: one control period, the default). For a bridge whose control rate is above
        the rate its arm commands come at (the fetch graph: 60 Hz bridge, 20 Hz lift policy and
        mission): the arm then moves as the commands' sender expects, not in a 16.7 ms jerk
        followed by 33 ms of standing still, which flung a held cube out of MuJoCo's soft grasp
        (tools/stow_rate_check.py). Rounded to whole physics steps, at least one. Part of the
        end-effector-delta capability; ValueError for a period that is not finite and positive."""
        raise self._not_supported(Capability.END_EFFECTOR_DELTA)

    def set_end_effector_yaw(self, yaw: float) -> None:
        """Turn the downward-pointing gripper to ``yaw`` (rad) about the arm base's vertical,
        relative to the arm's straight-down pose, and hold the grasp point where it is. Latched:
        every later :meth:`set_end_effector_delta` keeps this yaw, until the next call or a reset.
        Part of the end-effector-delta capability; ``|yaw|`` beyond pi/2 is refused (ValueError):
        a two-finger gripper is symmetric under a half turn."""
        raise self._not_supported(Capability.END_EFFECTOR_DELTA)

    def set_gripper(self, open: bool) -> None:  # noqa: A002 - name fixed by the contract
        """Open or close the gripper."""
        raise self._not_supported(Capability.GRIPPER)

    def gripper_contacts(self) -> List[str]:
        """What touches the fingers now, one line per contact (other body and link, normal force,
        distance), plus the finger coupling's force where there is one: for a bridge's report of
        a gripper that does not move when commanded. Simulator truth, for logs only. [] where the
        engine cannot say."""
        return []

    def set_cart_force(self, force: float) -> None:
        """Horizontal force (N) on the cart-pole cart, latched until changed."""
        raise self._not_supported(Capability.CART_FORCE)

    def set_plate_angles(self, pitch: float, roll: float) -> None:
        """Ball-plate tilt targets (rad): ``pitch`` about x, ``roll`` about y."""
        raise self._not_supported(Capability.PLATE_ANGLES)

    # ---------------------------------------------------------------- helpers
    def _not_supported(self, capability: Capability) -> NotSupported:
        """Build the error for a missing capability (subclasses may reuse it)."""
        try:
            caps = [str(c) for c in self.capabilities]
        except Exception:  # capabilities may fail before load_scene
            caps = []
        return NotSupported(str(capability), self.scene_name, caps)

    def _not_implemented(self, method: str, reason: str = "") -> NotImplementedError:
        """The error of an optional method this engine does not implement, saying why."""
        why = reason or getattr(self, "unimplemented_reason", "") or "not implemented for this engine"
        return NotImplementedError(f"{type(self).__name__}.{method}: {why}")

    def require(self, capability: Capability) -> None:
        """Raise :class:`NotSupported` unless ``capability`` is available."""
        if capability not in self.capabilities:
            raise self._not_supported(capability)

    def __enter__(self) -> "SimBackend":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
