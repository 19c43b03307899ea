"""Depth (and optional RGB) noise like an active-stereo RGB-D camera's, for the robot-mode sim.

A rendered depth image is exact; a robot's is not. :class:`DepthNoise` turns the former into
something like the latter, pure numpy, seeded (the same seed and image give the same noise):

* **range noise** growing with distance squared: ``sigma(z) = sigma_0 + k * z**2``. For a stereo
  camera the depth RMS error is ``z**2 * subpixel / (focal_px * baseline)``; an Intel RealSense D435
  (50 mm baseline, ~640 px focal length at 848x480, ~0.08 px subpixel) gives ``k`` = 0.0025 /m, i.e.
  2.5 mm at 1 m and 10 mm at 2 m (Intel's published depth-RMS formula; the defaults use it);
* **quantisation** in disparity, not depth: ``d = f * B / z`` rounded to ``1 / subpixel_steps`` px of
  the *sensor's* focal length (``focal_px``; not the rendered image's, which is smaller), so the
  depth step also grows with ``z**2`` (about 2 mm at 1 m and 8 mm at 2 m with the defaults);
* **invalid pixels** (NaN, as the bridge's 32FC1 depth says "no return"): at depth discontinuities
  (the two cameras see different surfaces there), at grazing angles (a surface seen nearly edge-on
  returns no usable texture), and a small share at random;
* **RGB noise**: Gaussian per channel, off by default.

``DepthNoise.off()`` (or ``enabled=False``) returns the image unchanged, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class DepthNoise:
    """Parameters (SI units); defaults resemble a RealSense D435 at 0.3-3 m."""

    enabled: bool = True
    sigma_0: float = 0.0005          # m, range-independent part of the noise
    k_z2: float = 0.0025             # 1/m: sigma grows as k * z^2
    baseline: float = 0.05           # m, stereo baseline (quantisation)
    focal_px: float = 640.0          # the stereo sensor's focal length, px (quantisation)
    subpixel_steps: float = 16.0     # disparity resolution, steps per pixel (0: no quantisation)
    edge_jump: float = 0.03          # m: neighbours differing by more than this (relative to z: x z) -> invalid
    grazing_deg: float = 78.0        # surfaces seen more edge-on than this -> invalid
    dropout: float = 0.005           # share of pixels lost at random
    rgb_sigma: float = 0.0           # RGB noise std in 0..255 units (0: off)

    def __post_init__(self) -> None:
        for name in ("sigma_0", "k_z2", "baseline", "focal_px", "subpixel_steps", "edge_jump", "dropout", "rgb_sigma"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"DepthNoise.{name} must be a finite number >= 0, got {value!r}")
        if not 0.0 < self.grazing_deg <= 90.0:
            raise ValueError(f"DepthNoise.grazing_deg must be in (0, 90], got {self.grazing_deg!r}")
        if self.dropout > 1.0:
            raise ValueError(f"DepthNoise.dropout is a share in [0, 1], got {self.dropout!r}")

    @staticmethod
    def off() -> "DepthNoise":
        return DepthNoise(enabled=False)

    def with_(self, **changes) -> "DepthNoise":
        return replace(self, **changes)

    # ------------------------------------------------------------------ application
    def apply(self, depth: np.ndarray, fx: float, fy: float, cx: float, cy: float,
              rng: np.random.Generator, rgb: Optional[np.ndarray] = None) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """Noisy copies of ``depth`` (float32 metres, NaN = no return) and ``rgb`` (uint8, or None)."""
        if not self.enabled:
            return depth, rgb
        z = np.asarray(depth, dtype=np.float64)
        valid = np.isfinite(z) & (z > 0)
        invalid = ~valid | self._edges(z, valid) | self._grazing(z, valid, fx, fy, cx, cy)
        if self.dropout > 0:
            invalid |= rng.random(z.shape) < self.dropout
        noisy = z + rng.standard_normal(z.shape) * (self.sigma_0 + self.k_z2 * np.square(np.where(valid, z, 0.0)))
        if self.subpixel_steps > 0 and self.baseline > 0:
            fb = self.focal_px * self.baseline
            with np.errstate(divide="ignore", invalid="ignore"):
                disparity = np.round(fb / noisy * self.subpixel_steps) / self.subpixel_steps
                noisy = fb / disparity
        invalid |= ~np.isfinite(noisy) | (noisy <= 0)
        out = np.where(invalid, np.nan, noisy).astype(np.float32)
        if rgb is not None and self.rgb_sigma > 0:
            rgb = np.clip(np.asarray(rgb, dtype=np.float64) + rng.normal(0.0, self.rgb_sigma, np.shape(rgb)),
                          0, 255).astype(np.uint8)
        return out, rgb

    def _edges(self, z: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Pixels next to a depth jump larger than ``edge_jump`` (scaled by range: x z / 1 m)."""
        zz = np.where(valid, z, np.inf)
        jump = np.zeros(z.shape, dtype=bool)
        limit = self.edge_jump * np.maximum(np.where(valid, z, 1.0), 1.0)
        with np.errstate(invalid="ignore"):
            for axis in (0, 1):
                d = np.abs(np.diff(zz, axis=axis))
                big = ~(d <= (limit[:-1, :] if axis == 0 else limit[:, :-1]))
                if axis == 0:
                    jump[:-1, :] |= big
                    jump[1:, :] |= big
                else:
                    jump[:, :-1] |= big
                    jump[:, 1:] |= big
        return jump & valid

    def _grazing(self, z: np.ndarray, valid: np.ndarray, fx: float, fy: float, cx: float, cy: float) -> np.ndarray:
        """Pixels whose surface normal (from neighbouring points) is nearly perpendicular to the ray."""
        h, w = z.shape
        u = (np.arange(w) - cx) / fx
        v = (np.arange(h) - cy) / fy
        zz = np.where(valid, z, np.nan)
        pts = np.stack([zz * u[None, :], zz * v[:, None], zz], axis=-1)
        dx = np.zeros_like(pts)
        dy = np.zeros_like(pts)
        dx[:, 1:-1] = pts[:, 2:] - pts[:, :-2]
        dy[1:-1, :] = pts[2:, :] - pts[:-2, :]
        normal = np.cross(dx, dy)
        norm = np.linalg.norm(normal, axis=-1)
        ray = pts / np.linalg.norm(pts, axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.abs(np.sum(normal * ray, axis=-1)) / norm
            graze = cos < np.cos(np.radians(self.grazing_deg))
        graze &= np.isfinite(cos)
        return graze & valid
