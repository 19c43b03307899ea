"""Mesh objects: a Wavefront OBJ placed so that its bounding box is centred on the object's origin.

Every engine then agrees on what an object's pose means (the centre of its box, as for the
primitives), whatever origin the file was drawn around. :class:`MeshSpec` says which file, how
to scale and turn it; :func:`mesh_placement` computes the frame offset each backend applies to
the visual and collision shapes, and the extents that become the object's ``size``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..geometry import quat_from_rpy, quat_to_matrix

__all__ = ["MeshPlacement", "MeshSpec", "mesh_placement", "obj_vertices"]


@dataclass(frozen=True)
class MeshSpec:
    """A mesh for an object of shape ``'mesh'``.

    :param path: the visual mesh (OBJ)
    :param scale: uniform scale of the file's coordinates (files are in assorted units)
    :param rpy: rotation of the mesh in the object's frame, rad (many files are y-up)
    :param collision_path: the collision mesh (OBJ; default ``path``). Engines collide with its
        convex hull, or with each of its objects' hulls where the file is a convex decomposition
    """

    path: str
    scale: float = 1.0
    rpy: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    collision_path: Optional[str] = None

    @property
    def collision_file(self) -> str:
        return self.collision_path or self.path


@dataclass(frozen=True)
class MeshPlacement:
    """Where the mesh file's coordinates go in the object's frame: ``R(orientation) * scale * v + offset``."""

    offset: Tuple[float, float, float]
    orientation: Tuple[float, float, float, float]   # x, y, z, w
    extents: Tuple[float, float, float]              # bounding box in the object's frame, m


@functools.lru_cache(maxsize=64)
def obj_vertices(path: str) -> np.ndarray:
    """(N, 3) vertex positions of an OBJ file (its ``v`` lines)."""
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("v "):
                rows.append([float(x) for x in line.split()[1:4]])
    if not rows:
        raise ValueError(f"mesh {path}: no vertices")
    return np.asarray(rows, dtype=np.float64)


def mesh_placement(mesh: MeshSpec) -> MeshPlacement:
    """The offset that centres the turned, scaled visual mesh's bounding box on the origin."""
    q = quat_from_rpy(*mesh.rpy)
    v = obj_vertices(mesh.path) * mesh.scale @ quat_to_matrix(q).T
    lo, hi = v.min(axis=0), v.max(axis=0)
    centre = 0.5 * (lo + hi)
    return MeshPlacement(tuple(float(x) for x in -centre), tuple(float(x) for x in q),
                         tuple(float(x) for x in hi - lo))
