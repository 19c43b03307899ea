"""Robust 3-D centre of a segmented object from depth, intrinsics and camera pose.

The raw centroid of the visible surface sits in front of the true centre (by about half
the object's depth along the view ray) and is dragged by stray pixels. Instead, the localiser:

1. keep the mask's valid points, drop outliers by median absolute deviation (3-D);
2. horizontally, use the *support function* of a centrally symmetric footprint (box,
   disc): for any yaw, the half-width seen across the view ray equals the half-depth along
   it, so the centre lies ``W/2`` behind the nearest visible point along the horizontal
   ray, and at the middle of the lateral extent ``W`` (robust percentiles, plus one pixel
   footprint for pixel quantisation);
3. vertically, when the support plane under the object is known, the centre is half way
   between the support and the top (98th percentile of height); otherwise the middle of the
   visible vertical extent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np


@dataclass
class Localisation:
    centre: np.ndarray   # (3,) map frame
    size: np.ndarray     # (3,) axis-aligned extent estimate (m)
    n_points: int
    range_m: float       # distance camera -> centre


def localise(points: np.ndarray, camera_position: np.ndarray, support: Optional[float] = None,
             pixel_size: float = 0.0, lo_pct: float = 2.0, hi_pct: float = 98.0) -> Optional[Localisation]:
    """Centre estimate from the mask's map-frame ``points`` (N,3); ``None`` if too few points.

    :param support: map z of the plane the object stands on (None: unknown)
    :param pixel_size: footprint of one pixel at the object's range (m), added to extents
    """
    pts = points[np.all(np.isfinite(points), axis=1)]
    if len(pts) < 5:
        return None
    med = np.median(pts, axis=0)
    dev = np.linalg.norm(pts - med, axis=1)
    mad = np.median(dev) + 1e-6
    pts = pts[dev < med_cut(mad)]
    if len(pts) < 5:
        return None
    cam = np.asarray(camera_position, dtype=float)
    ray = np.median(pts, axis=0)[:2] - cam[:2]
    nr = np.linalg.norm(ray)
    if nr < 1e-6:  # looking straight down: plain xy extent
        lo, hi = np.percentile(pts[:, :2], [lo_pct, hi_pct], axis=0)
        cxy = 0.5 * (lo + hi)
        width = float(np.max(hi - lo) + pixel_size)
    else:
        ray /= nr
        perp = np.array([-ray[1], ray[0]])
        along = pts[:, :2] @ ray
        lat = pts[:, :2] @ perp
        l0, l1 = np.percentile(lat, [lo_pct, hi_pct])
        width = float(l1 - l0 + pixel_size)
        near = float(np.percentile(along, lo_pct)) - 0.5 * pixel_size
        cxy = ray * (near + 0.5 * width) + perp * (0.5 * (l0 + l1))
    z0, z1 = np.percentile(pts[:, 2], [lo_pct, hi_pct])
    z1 += 0.5 * pixel_size
    if support is not None and np.isfinite(support) and z0 - support < 0.05:
        height = max(float(z1 - support), 1e-3)
        cz = support + 0.5 * height
    else:
        height = float(z1 - z0 + 0.5 * pixel_size)
        cz = 0.5 * (z0 + z1)
    centre = np.array([cxy[0], cxy[1], cz])
    return Localisation(centre, np.array([width, width, height]), int(len(pts)),
                        float(np.linalg.norm(centre - cam)))


def med_cut(mad: float) -> float:
    """Outlier radius: points further than this from the median are dropped."""
    return 4.0 * 1.4826 * mad + 0.01


def surface_centroid(points: np.ndarray) -> np.ndarray:
    """The naive estimate (mean of the visible points), kept for comparison in the evaluation."""
    pts = points[np.all(np.isfinite(points), axis=1)]
    return pts.mean(axis=0)
