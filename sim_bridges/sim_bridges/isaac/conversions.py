"""Conventions between Isaac Sim 5.1's Python API and the ``sim_bridges`` contract (pure numpy).

Never run against Isaac Sim here (it cannot be installed on these machines): every function is
derived from the documented conventions and unit-tested with numbers, not with Isaac Sim.

* Quaternions: Isaac Sim (``isaacsim.core``, USD ``Gf.Quat``) orders them **w, x, y, z**; the
  contract (and ROS) **x, y, z, w**.
* Cameras: a USD camera looks down its **-z** axis with **+y up**; the contract's optical frame
  looks down **+z** with **+y down** (x right in both): a rotation of pi about x.
  ``isaacsim.sensors.camera.Camera(..., camera_axes="ros")`` already takes/returns optical poses.
* Intrinsics: USD cameras are described by ``focalLength`` and apertures (mm, "tenths of a
  scene unit" in USD terms, only ratios matter here); square pixels need
  ``vertical_aperture = horizontal_aperture * height / width``.
* Depth: the ``distance_to_image_plane`` annotator is the contract's depth (optical z);
  ``distance_to_camera`` is the ray length and needs the per-pixel conversion below.
* Diff drive: ``DifferentialController(wheel_radius, wheel_base)`` gives the same wheel speeds
  as :func:`sim_bridges.geometry.diff_drive_wheel_speeds`; here they are also scaled down
  together to the wheel speed limit (the contract's rule) and put in the articulation's DOF order.
* Joint ordering: an Articulation's ``dof_names`` come in PhysX's order (breadth-first over the
  tree), not the URDF's; :class:`JointOrder` maps between the two by name.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Dict, Sequence, Tuple

import numpy as np

from ..contract import CameraIntrinsics, Pose
from ..geometry import diff_drive_wheel_speeds, quat_multiply
from ..robots.spec import CameraSpec, DiffDriveParams

if TYPE_CHECKING:
    from ..scenes.spec import ObjectSpec

#: Rotation of pi about x (xyzw): optical frame <-> USD camera frame.
_USD_FROM_OPTICAL = np.array([1.0, 0.0, 0.0, 0.0])

ISAAC_SIM_VERSION = "5.1"


def require_isaacsim() -> None:
    """Raise one clear ``RuntimeError`` line unless Isaac Sim's Python package is importable."""
    import importlib.util

    if importlib.util.find_spec("isaacsim") is None:
        raise RuntimeError(
            f"Isaac Sim {ISAAC_SIM_VERSION} is not installed here (module 'isaacsim' not importable); it needs "
            "NVIDIA's own package index (pip install isaacsim[all]==5.1.* --extra-index-url https://pypi.nvidia.com) "
            "and an RTX GPU. Available backends: pybullet, mujoco")


def quat_xyzw_to_wxyz(q: Sequence[float]) -> np.ndarray:
    """Contract/ROS ``(x, y, z, w)`` -> Isaac Sim/USD ``(w, x, y, z)``."""
    q = np.asarray(q, dtype=np.float64)
    if q.shape[-1] != 4:
        raise ValueError(f"a quaternion has 4 components, got shape {q.shape}")
    return np.concatenate([q[..., 3:4], q[..., :3]], axis=-1)


def quat_wxyz_to_xyzw(q: Sequence[float]) -> np.ndarray:
    """Isaac Sim/USD ``(w, x, y, z)`` -> contract/ROS ``(x, y, z, w)``."""
    q = np.asarray(q, dtype=np.float64)
    if q.shape[-1] != 4:
        raise ValueError(f"a quaternion has 4 components, got shape {q.shape}")
    return np.concatenate([q[..., 1:4], q[..., 0:1]], axis=-1)


def usd_camera_from_optical(optical: Pose) -> Pose:
    """World pose of the USD camera prim (looks down -z, y up) for an optical-frame pose."""
    return Pose(optical.position, quat_multiply(optical.orientation, _USD_FROM_OPTICAL))


def optical_from_usd_camera(usd_camera: Pose) -> Pose:
    """Optical-frame pose (z forward, y down) of a USD camera prim's world pose."""
    # the rotation of pi about x is its own inverse
    return Pose(usd_camera.position, quat_multiply(usd_camera.orientation, _USD_FROM_OPTICAL))


def usd_camera_params(spec: CameraSpec, focal_length: float = 24.0) -> Dict[str, float]:
    """USD camera attributes reproducing ``spec``'s vertical field of view with square pixels.

    :return: ``focal_length``, ``horizontal_aperture``, ``vertical_aperture`` (same unit as
        ``focal_length``) and ``clipping_range`` ``(near, far)`` in metres
    """
    if not focal_length > 0:
        raise ValueError(f"focal_length must be positive, got {focal_length}")
    vertical = 2.0 * focal_length * math.tan(0.5 * spec.vfov_rad)
    return {"focal_length": float(focal_length), "vertical_aperture": vertical,
            "horizontal_aperture": vertical * spec.width / spec.height,
            "clipping_range": (float(spec.near), float(spec.far))}


def intrinsics_from_usd_camera(width: int, height: int, focal_length: float, horizontal_aperture: float,
                               vertical_aperture: float) -> CameraIntrinsics:
    """Pinhole intrinsics in the contract's convention (pixel centres at integer coordinates).

    Isaac Sim's own ``Camera.get_intrinsics_matrix()`` puts the principal point at ``(W/2, H/2)``
    (pixel *edges*); a renderer centred on the image has it at ``((W-1)/2, (H-1)/2)`` here.
    """
    if min(width, height) <= 0 or not (focal_length > 0 and horizontal_aperture > 0 and vertical_aperture > 0):
        raise ValueError("width, height, focal length and apertures must be positive")
    fx = focal_length / horizontal_aperture * width
    fy = focal_length / vertical_aperture * height
    return CameraIntrinsics(int(width), int(height), fx, fy, 0.5 * width - 0.5, 0.5 * height - 0.5)


def depth_from_distance_to_camera(distance: np.ndarray, intrinsics: CameraIntrinsics) -> np.ndarray:
    """Optical-z depth from a ray-length image (``distance_to_camera`` annotator); inf/NaN -> NaN."""
    distance = np.asarray(distance, dtype=np.float64)
    if distance.shape != (intrinsics.height, intrinsics.width):
        raise ValueError(f"image shape {distance.shape} does not match the intrinsics "
                         f"({intrinsics.height}, {intrinsics.width})")
    u = (np.arange(intrinsics.width) - intrinsics.cx) / intrinsics.fx
    v = (np.arange(intrinsics.height) - intrinsics.cy) / intrinsics.fy
    scale = np.sqrt(1.0 + u[None, :] ** 2 + v[:, None] ** 2)
    depth = distance / scale
    depth[~np.isfinite(depth)] = np.nan
    return depth.astype(np.float32)


def wheel_velocity_targets(linear_x: float, angular_z: float, dd: DiffDriveParams) -> Tuple[float, float]:
    """``(left, right)`` wheel joint velocity targets (rad/s), scaled down together to the limit."""
    if not (math.isfinite(linear_x) and math.isfinite(angular_z)):
        raise ValueError(f"base velocity must be finite, got ({linear_x}, {angular_z})")
    left, right = diff_drive_wheel_speeds(linear_x, angular_z, dd.wheel_radius, dd.track_width)
    scale = max(1.0, abs(left) / dd.max_wheel_speed, abs(right) / dd.max_wheel_speed)
    return left / scale, right / scale


class JointOrder:
    """Maps joint vectors between the contract's order (URDF) and an articulation's ``dof_names``.

    :raises ValueError: if a contract joint is missing from the articulation (one line naming them)
    """

    def __init__(self, contract_names: Sequence[str], sim_names: Sequence[str]) -> None:
        self.contract_names = tuple(contract_names)
        self.sim_names = tuple(sim_names)
        index = {n: i for i, n in enumerate(self.sim_names)}
        missing = [n for n in self.contract_names if n not in index]
        if missing:
            raise ValueError(f"joints {missing} are not in the articulation (its dof_names: {list(self.sim_names)})")
        if len(set(self.contract_names)) != len(self.contract_names):
            raise ValueError(f"duplicate joint names in {list(self.contract_names)}")
        self._to_sim = np.array([index[n] for n in self.contract_names], dtype=np.int64)

    @property
    def sim_indices(self) -> np.ndarray:
        """Articulation DOF index of each contract joint (``joint_indices=`` of ``ArticulationAction``)."""
        return self._to_sim.copy()

    def from_sim(self, values: Sequence[float]) -> np.ndarray:
        """Articulation-ordered vector (all DOFs) -> contract-ordered vector."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (len(self.sim_names),):
            raise ValueError(f"expected {len(self.sim_names)} values in dof_names order, got shape {values.shape}")
        return values[self._to_sim]

    def to_sim(self, values: Sequence[float], fill: Sequence[float]) -> np.ndarray:
        """Contract-ordered vector -> articulation-ordered vector; DOFs not in the contract keep ``fill``."""
        values = np.asarray(values, dtype=np.float64)
        out = np.array(fill, dtype=np.float64)
        if values.shape != (len(self.contract_names),) or out.shape != (len(self.sim_names),):
            raise ValueError("values must follow contract_names and fill must follow dof_names")
        out[self._to_sim] = values
        return out


# ------------------------------------------------------------------ used by the backend (isaac/backend.py)
def object_prim_args(obj: "ObjectSpec", prim_path: str) -> Tuple[str, Dict[str, object]]:
    """``(class name in isaacsim.core.api.objects, keyword arguments)`` building ``obj``.

    Mass 0 -> a ``Fixed*`` prim (static geometry), else ``Dynamic*`` with the spec's mass. Sizes are
    full extents in the spec; ``DynamicCuboid`` takes ``size=1`` scaled by ``scale`` = the extents,
    spheres and cylinders a radius (and a height). Orientation is w-x-y-z; colour RGB in 0..1.
    """
    if obj.shape not in ("box", "sphere", "cylinder"):
        raise ValueError(f"object '{obj.name}' ({obj.kind}, shape '{obj.shape}'): the Isaac Sim backend builds "
                         "primitives only (mesh objects would come in through USD: not written, as nothing of "
                         "Isaac Sim runs here); use backend 'pybullet' or 'mujoco' for scenes with mesh objects")
    kind = {"box": "Cuboid", "sphere": "Sphere", "cylinder": "Cylinder"}[obj.shape]
    static = obj.mass <= 0
    sx, sy, sz = (float(v) for v in obj.size)
    kwargs: Dict[str, object] = {
        "prim_path": prim_path, "name": obj.name,
        "position": np.asarray(obj.pose.position, dtype=np.float64),
        "orientation": quat_xyzw_to_wxyz(obj.pose.orientation),
        "color": np.asarray(obj.rgba[:3], dtype=np.float64),
    }
    if kind == "Cuboid":
        kwargs.update(size=1.0, scale=np.array([sx, sy, sz]))
    elif kind == "Sphere":
        kwargs.update(radius=0.5 * sx)
    else:
        kwargs.update(radius=0.5 * sx, height=sz)
    if not static:
        kwargs["mass"] = float(obj.mass)
    return ("Fixed" if static else "Dynamic") + kind, kwargs


def relative_pose(parent: Pose, child: Pose) -> Pose:
    """``child`` expressed in ``parent``'s frame (both given in one common frame)."""
    r_p = _matrix(parent.orientation)
    inv = np.array([-1.0, -1.0, -1.0, 1.0]) * np.asarray(parent.orientation, dtype=np.float64)
    return Pose(r_p.T @ (np.asarray(child.position) - np.asarray(parent.position)),
                quat_multiply(inv, child.orientation))


def body_twist(orientation_xyzw: Sequence[float], linear_world: Sequence[float],
               angular_world: Sequence[float]) -> Tuple[np.ndarray, np.ndarray]:
    """World-frame velocities (what ``get_linear_velocity`` / ``get_angular_velocity`` return) ->
    ``(linear, angular)`` in the body frame, as ``nav_msgs/Odometry``'s twist (``base_link``)."""
    r = _matrix(orientation_xyzw)
    return r.T @ np.asarray(linear_world, dtype=np.float64), r.T @ np.asarray(angular_world, dtype=np.float64)


def _matrix(q: Sequence[float]) -> np.ndarray:
    from ..geometry import quat_to_matrix

    return quat_to_matrix(q)
