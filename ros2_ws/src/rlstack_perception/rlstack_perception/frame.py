"""One registered RGB-D frame with its intrinsics and optical-frame pose, and back-projection."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rlstack_bundle.frames import quat_to_matrix


class FrameError(ValueError):
    """A frame that cannot be processed; ``kind`` names the reason (counted in diagnostics)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Frame:
    """RGB (H,W,3 uint8) + depth (H,W float32 m, NaN/0 = no return) + pinhole + optical pose.

    ``rotation`` (3x3) and ``translation`` (3,) map optical-frame points into the map frame.
    """

    rgb: np.ndarray
    depth: np.ndarray
    fx: float
    fy: float
    cx: float
    cy: float
    rotation: np.ndarray
    translation: np.ndarray
    stamp: float = 0.0

    @property
    def height(self) -> int:
        return int(self.depth.shape[0])

    @property
    def width(self) -> int:
        return int(self.depth.shape[1])

    @property
    def camera_position(self) -> np.ndarray:
        return np.asarray(self.translation, dtype=float)

    def validate(self) -> None:
        """Raise :class:`FrameError` for frames the pipeline must skip."""
        if self.rgb.ndim != 3 or self.rgb.shape[2] != 3 or self.rgb.dtype != np.uint8:
            raise FrameError("bad_image", f"rgb must be HxWx3 uint8, got {self.rgb.shape} {self.rgb.dtype}")
        if self.depth.ndim != 2 or self.depth.shape != self.rgb.shape[:2]:
            raise FrameError("size_mismatch", f"depth {self.depth.shape} vs rgb {self.rgb.shape[:2]}")
        vals = (self.fx, self.fy, self.cx, self.cy)
        if not all(np.isfinite(vals)) or self.fx <= 0 or self.fy <= 0:
            raise FrameError("bad_intrinsics", f"intrinsics {vals}")
        if not (np.all(np.isfinite(self.rotation)) and np.all(np.isfinite(self.translation))):
            raise FrameError("bad_pose", "non-finite camera pose")
        valid = np.isfinite(self.depth) & (self.depth > 0)
        if valid.mean() < 0.05:
            raise FrameError("no_depth", f"only {valid.mean():.1%} of depth pixels are valid")

    @classmethod
    def from_pose(cls, rgb, depth, fx, fy, cx, cy, position, quaternion, stamp: float = 0.0) -> "Frame":
        return cls(np.asarray(rgb), np.asarray(depth, dtype=np.float32), float(fx), float(fy), float(cx),
                   float(cy), quat_to_matrix(quaternion), np.asarray(position, dtype=float), stamp)

    @classmethod
    def from_camera_frame(cls, cf) -> "Frame":
        """From a ``sim_bridges`` ``CameraFrame`` (in-process evaluation and benchmarks)."""
        k = cf.intrinsics
        return cls.from_pose(cf.rgb, cf.depth, k.fx, k.fy, k.cx, k.cy, cf.pose.position, cf.pose.orientation,
                             cf.stamp)

    def points_world(self) -> tuple[np.ndarray, np.ndarray]:
        """(H,W,3) map-frame points and the (H,W) valid-depth mask (invalid points are NaN)."""
        d = np.asarray(self.depth, dtype=np.float64)
        valid = np.isfinite(d) & (d > 0)
        d = np.where(valid, d, np.nan)
        h, w = d.shape
        u = (np.arange(w, dtype=np.float64) - self.cx) / self.fx
        v = (np.arange(h, dtype=np.float64) - self.cy) / self.fy
        r = self.rotation
        # world = R @ [u d, v d, d] + t, written per component to avoid a (H,W,3) temporary matmul
        pts = np.empty((h, w, 3))
        for i in range(3):
            pts[..., i] = d * (r[i, 0] * u[None, :] + r[i, 1] * v[:, None] + r[i, 2]) + self.translation[i]
        return pts, valid
