"""Simulator-agnostic scene descriptions (objects, robots, cameras, static map)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..contract import PRIMITIVE_KINDS, Capability, OccupancyBox, Pose
from ..robots.spec import CameraSpec, RobotSpec
from .meshes import MeshSpec

__all__ = ["COLORS", "ObjectSpec", "SceneSpec", "box_footprint", "sample_separated_xy"]

#: Named colours used for objects (RGBA); names end up in ground truth.
COLORS: Dict[str, Tuple[float, float, float, float]] = {
    "red": (0.85, 0.1, 0.1, 1.0),
    "green": (0.1, 0.7, 0.2, 1.0),
    "blue": (0.1, 0.25, 0.85, 1.0),
    "yellow": (0.95, 0.85, 0.1, 1.0),
    "white": (0.92, 0.92, 0.92, 1.0),
    "grey": (0.6, 0.6, 0.6, 1.0),
    "brown": (0.55, 0.38, 0.22, 1.0),
    "beige": (0.85, 0.8, 0.7, 1.0),
    "orange": (1.0, 0.55, 0.1, 1.0),
}


@dataclass(frozen=True)
class ObjectSpec:
    """A rigid object built from a primitive or a mesh (or loaded from ``urdf_path``).

    :param shape: ``'box'``, ``'sphere'``, ``'cylinder'`` or ``'mesh'``
    :param size: full extents (x, y, z) in m: sphere (d, d, d), cylinder (d, d, h); a mesh's
        bounding box (``meshes.mesh_placement(mesh).extents``), centred on the object's origin
    :param mass: kg; 0 makes the object static (walls, furniture)
    :param pose: default pose of its centre (reset may override it by seed)
    :param urdf_path: load this URDF instead of building the primitive
        (``shape``/``size``/``color_name`` then only serve as metadata)
    :param mesh: the OBJ file of a ``'mesh'`` object (:class:`~sim_bridges.scenes.meshes.MeshSpec`)
    :param kind: what people call it ("cube", "duck", "mug"): perception's label word. Default:
        the primitive's everyday name (box: cube, sphere: ball, cylinder: cylinder)
    """

    name: str
    shape: str
    size: Tuple[float, float, float]
    color_name: str
    mass: float = 0.1
    pose: Pose = field(default_factory=lambda: Pose([0.0, 0.0, 0.0]))
    lateral_friction: float = 0.8
    rolling_friction: float = 0.0
    spinning_friction: float = 0.0
    restitution: float = 0.0
    urdf_path: Optional[str] = None
    mesh: Optional[MeshSpec] = None
    kind: str = ""

    def __post_init__(self) -> None:
        if self.shape not in ("box", "sphere", "cylinder", "mesh"):
            raise ValueError(f"object '{self.name}': unknown shape '{self.shape}'")
        if (self.shape == "mesh") != (self.mesh is not None):
            raise ValueError(f"object '{self.name}': a mesh is given exactly for shape 'mesh'")
        if not self.kind:
            default = PRIMITIVE_KINDS.get(self.shape)
            if default is None:
                raise ValueError(f"object '{self.name}': a mesh object needs its kind (what people call it)")
            object.__setattr__(self, "kind", default)
        if self.color_name not in COLORS:
            raise ValueError(f"object '{self.name}': unknown colour '{self.color_name}'")

    @property
    def rgba(self) -> Tuple[float, float, float, float]:
        return COLORS[self.color_name]


def box_footprint(obj: ObjectSpec) -> OccupancyBox:
    """Axis-aligned 2-D footprint of a yaw-free static object."""
    x, y, z = obj.pose.position
    sx, sy, sz = obj.size
    return OccupancyBox(obj.name, x - sx / 2, x + sx / 2, y - sy / 2, y + sy / 2, z + sz / 2)


@dataclass(frozen=True)
class SceneSpec:
    """Everything a backend needs to build and reset a scene.

    :param objects: dynamic objects, reported by ``ground_truth``
    :param static: fixed geometry (mass 0): walls, tables, obstacles
    :param cameras: world-fixed cameras (robot cameras live in ``RobotSpec.cameras``)
    :param occupancy: footprints of the static geometry, or ``None`` if not mapped
    :param sample_object_poses: ``rng -> {object_name: Pose}`` called on every
        reset; objects not returned go back to their default pose
    :param ground_plane: add an infinite floor at z = 0
    """

    name: str
    robots: Tuple[RobotSpec, ...] = ()
    objects: Tuple[ObjectSpec, ...] = ()
    static: Tuple[ObjectSpec, ...] = ()
    cameras: Tuple[CameraSpec, ...] = ()
    occupancy: Optional[Tuple[OccupancyBox, ...]] = None
    sample_object_poses: Optional[Callable[[np.random.Generator], Mapping[str, Pose]]] = None
    ground_plane: bool = True
    gravity: float = 9.81

    @property
    def capabilities(self) -> frozenset:
        caps = set()
        for robot in self.robots:
            caps |= robot.capabilities
        if self.cameras:
            caps.add(Capability.CAMERA)
        if self.occupancy is not None:
            caps.add(Capability.STATIC_OCCUPANCY)
        return frozenset(caps)

    @property
    def all_cameras(self) -> Tuple[CameraSpec, ...]:
        return tuple(self.cameras) + tuple(c for r in self.robots for c in r.cameras)


def sample_separated_xy(
    rng: np.random.Generator,
    regions: Sequence[Tuple[float, float, float, float]],
    n: int,
    min_separation: float,
    max_tries: int = 1000,
) -> list:
    """``n`` points ``(x, y, region_index)``, each in one of the ``regions``
    ``(x0, x1, y0, y1)`` and pairwise at least ``min_separation`` apart.

    Rejection sampling drawing only from ``rng``, so the result is a pure
    function of the seed.
    """
    points: list = []
    for _ in range(max_tries):
        if len(points) == n:
            break
        region = int(rng.integers(len(regions)))
        x0, x1, y0, y1 = regions[region]
        p = (float(rng.uniform(x0, x1)), float(rng.uniform(y0, y1)), region)
        if all((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 >= min_separation**2 for q in points):
            points.append(p)
    if len(points) < n:
        raise RuntimeError(f"could not place {n} objects {min_separation} m apart")
    return points
