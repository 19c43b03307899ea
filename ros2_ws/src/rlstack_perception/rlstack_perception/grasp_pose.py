"""Grasp pose of one object from one RGB-D frame: centre, yaw (mod 90 deg), size, support height.

Pure numpy (no rclpy). The lift policy needs the target's centre and yaw in ``base_link``
(``/grasp_target``) once, before the hand closes in and hides it (docs/reference/mission.md, "Robot mode").
The semantic map gives *which* object and roughly where (a centroid of the visible surface, a
few cm off the centre); this module refines that into a grasp pose from a close look:

1. back-project the depth image into the output frame (``Frame.points_world`` with the camera's
   pose in, e.g., ``base_link``) and keep the points within ``crop_radius`` of the hint;
2. **support height**: the dominant height among the points in a ring around the hint (a table
   top or the floor; a 5 mm histogram mode). Objects stand on it;
3. **object points**: above the support by ``min_height``, within ``object_radius`` of the hint,
   re-centred twice on their own median (the hint may be off by a few cm);
4. **top face**: object points within ``top_band`` of the top (98th percentile of height). The
   camera looks down on it, so it is seen whole even when the sides are half hidden. Its footprint
   rectangle (:func:`robust_rectangle`: the direction whose 2-98 % extents enclose the least
   area; percentiles, not a convex hull, so depth noise and stray pixels do not inflate it) gives
   the centre in x/y, the yaw mod 90 deg and the size; the centre's height is half way between
   support and top;
5. **round or square**: a footprint whose area hardly changes with direction is round:
   ``symmetric`` (the yaw is still the footprint rectangle's: any yaw grasps a ball or an upright
   cylinder alike, and a small noisy cube top can read round).

Each estimate says how sure it is (``n_points``, ``fill``, ``quality``) and, when it is not
usable, why (``reason``: ``TARGET_NOT_VISIBLE``, ``TOO_FEW_POINTS``, ``POSE_UNCERTAIN``, ``BAD_INPUT``):
bad input never raises. :func:`fuse_estimates` combines looks from several viewpoints and says
whether they agree.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

from rlstack_bundle.frames import wrap_quarter

from .frame import Frame

TARGET_NOT_VISIBLE = "TARGET_NOT_VISIBLE"
TOO_FEW_POINTS = "TOO_FEW_POINTS"
POSE_UNCERTAIN = "POSE_UNCERTAIN"
BAD_INPUT = "BAD_INPUT"


@dataclass(frozen=True)
class GraspPoseConfig:
    """Parameters of :func:`estimate_grasp_pose` (lengths in metres)."""

    crop_radius: float = 0.20        # points farther than this from the hint (x/y) are ignored
    support_ring: Tuple[float, float] = (0.07, 0.18)   # ring around the hint that shows the support
    object_radius: float = 0.07      # object points within this of the (re-centred) hint
    min_height: float = 0.008        # above the support by this much = object
    max_height: float = 0.30         # taller than this above the support = not the object (a wall, the arm)
    top_band: float = 0.012          # top face = points within this of the top (depth noise: ~3 mm at 1.2 m)
    # 25, not 40: a 6 cm ball on the floor seen from 1 m with the depth noise model shows ~30 points
    # above 3 sigma, and a ball never estimated could not be told from the cube asked for (a fetch
    # tried a floor ball three times as 'the blue cube'); floor views usable 92 -> 189 of 198, cubes
    # from docking distance unchanged (docs/reference/perception.md)
    min_object_points: int = 25
    min_top_points: int = 20
    round_above: float = 0.8         # footprint roundness above this: round (disc: 1, square: ~0.5)
    max_footprint: float = 0.15      # a rectangle side longer than this: not one graspable object
    far_edge_px: float = 2.0         # image rows of the top face's far edge the camera loses (see below)
    # The depth's range noise, sigma(r) = depth_sigma_0 + depth_k_r2 * r^2 at range r from the camera
    # (defaults: the bridge's RealSense-D435-like model, sim_bridges.sensor_noise.DepthNoise; 7 mm at
    # 1.6 m, where the robot looks at a cube on the floor). The object's and the top face's height
    # thresholds widen to it: with fixed 8 / 12 mm ones, noisy floor points counted as the object and
    # a 98th-percentile top sat 2 sigma above the face, leaving too few face points.
    depth_sigma_0: float = 0.0005
    depth_k_r2: float = 0.0025


@dataclass
class GraspPose:
    """One estimate, in the frame of the points (e.g. ``base_link``)."""

    ok: bool
    reason: str = ""
    centre: np.ndarray = field(default_factory=lambda: np.full(3, np.nan))
    yaw: float = 0.0                 # rad, in [-pi/4, pi/4): the footprint's orientation mod 90 deg
    size: np.ndarray = field(default_factory=lambda: np.full(3, np.nan))   # footprint x/y along yaw, height
    support_height: float = math.nan
    symmetric: bool = False          # round footprint (yaw: still the rectangle's, meaningless for a disc)
    n_points: int = 0
    fill: float = 0.0                # top-face points' hull area / rectangle area
    quality: float = 0.0             # 0..1: how much to trust it (points and fit)

    def quaternion(self) -> Tuple[float, float, float, float]:
        """``(x, y, z, w)`` of the yaw about the frame's z axis."""
        return (0.0, 0.0, math.sin(self.yaw / 2.0), math.cos(self.yaw / 2.0))


def in_frame(estimate: GraspPose, rotation: np.ndarray, translation: np.ndarray) -> GraspPose:
    """``estimate`` expressed in another frame with the same vertical (``p' = R p + t``, R a yaw).

    Why: an estimate is made in ``base_link`` *at the image's time*. A caller that holds it while
    the robot moves (the fetch holds it in ``odom`` while the arm works) must transform it with the
    transform of that same instant: moving the arm out of the camera's view and back turns the
    base by ~1-2 deg and shifts it by ~1 cm, and the latest transform put the held target 2-3 cm
    off the cube (measured in the demo: fingers closed on nothing).
    """
    if not estimate.ok:
        return estimate
    r = np.asarray(rotation, dtype=np.float64)
    t = np.asarray(translation, dtype=np.float64)
    dyaw = math.atan2(r[1, 0], r[0, 0])
    return dataclasses.replace(estimate, centre=r @ estimate.centre + t,
                               yaw=wrap_quarter(estimate.yaw + dyaw),
                               support_height=float(estimate.support_height + t[2]))


def convex_hull(points: np.ndarray) -> np.ndarray:
    """Monotone-chain convex hull of (N, 2) points, counter-clockwise, without repeating the first."""
    pts = np.unique(np.asarray(points, dtype=np.float64), axis=0)
    if len(pts) < 3:
        return pts
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]

    def cross(o, a, b) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: List[np.ndarray] = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    upper: List[np.ndarray] = []
    for p in pts[::-1]:
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def polygon_area(hull: np.ndarray) -> float:
    if len(hull) < 3:
        return 0.0
    x, y = hull[:, 0], hull[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def min_area_rectangle(points: np.ndarray) -> Tuple[np.ndarray, Tuple[float, float], float]:
    """Minimum-area bounding rectangle of (N, 2) points: ``(centre (2,), (side_a, side_b), angle)``.

    Rotating calipers: the best rectangle has one side on a hull edge, so each edge direction is
    tried. ``angle`` is the direction of side ``a`` (rad).
    """
    hull = convex_hull(points)
    if len(hull) < 3:
        lo, hi = np.min(points, axis=0), np.max(points, axis=0)
        return 0.5 * (lo + hi), (float(hi[0] - lo[0]), float(hi[1] - lo[1])), 0.0
    best = None
    edges = np.roll(hull, -1, axis=0) - hull
    for ex, ey in edges:
        norm = math.hypot(ex, ey)
        if norm < 1e-12:
            continue
        c, s = ex / norm, ey / norm
        rot = np.array([[c, s], [-s, c]])          # into the edge's axes
        local = hull @ rot.T
        lo, hi = local.min(axis=0), local.max(axis=0)
        area = float(np.prod(hi - lo))
        if best is None or area < best[0]:
            centre_local = 0.5 * (lo + hi)
            best = (area, rot.T @ centre_local, (float(hi[0] - lo[0]), float(hi[1] - lo[1])), math.atan2(s, c))
    _, centre, sides, angle = best
    return centre, sides, angle


def robust_rectangle(points: np.ndarray, lo_pct: float = 2.0, hi_pct: float = 98.0, step_deg: float = 1.0
                     ) -> Tuple[np.ndarray, Tuple[float, float], float, float]:
    """The footprint rectangle of noisy (N, 2) points: ``(centre, (side_a, side_b), angle, roundness)``.

    For each direction in [0, 90) deg the points' extents along it and across it are taken between
    the ``lo_pct`` and ``hi_pct`` percentiles (a few stray or noisy points cannot inflate them, as
    they do a convex hull); the direction with the smallest area wins. ``roundness`` is the
    smallest area over the largest: 1 for a disc (every direction alike), about 0.5 for a square
    (its diagonal direction doubles the area).
    """
    pts = np.asarray(points, dtype=np.float64)
    angles = np.radians(np.arange(0.0, 90.0, step_deg))
    c, s = np.cos(angles), np.sin(angles)
    along = pts @ np.stack([c, s])            # (N, A)
    across = pts @ np.stack([-s, c])
    a_lo, a_hi = np.percentile(along, [lo_pct, hi_pct], axis=0)
    b_lo, b_hi = np.percentile(across, [lo_pct, hi_pct], axis=0)
    areas = (a_hi - a_lo) * (b_hi - b_lo)
    i = int(np.argmin(areas))
    ma, mb = 0.5 * (a_lo[i] + a_hi[i]), 0.5 * (b_lo[i] + b_hi[i])
    centre = np.array([ma * c[i] - mb * s[i], ma * s[i] + mb * c[i]])
    roundness = float(areas[i] / areas.max()) if areas.max() > 0 else 1.0
    return centre, (float(a_hi[i] - a_lo[i]), float(b_hi[i] - b_lo[i])), float(angles[i]), roundness


def _support_height(points: np.ndarray, hint_xy: np.ndarray, ring: Tuple[float, float],
                    below: float) -> Optional[float]:
    """The most common height (5 mm bins, then the mean within the bin) among ring points no
    higher than ``below``; None when the ring shows nothing."""
    d = np.linalg.norm(points[:, :2] - hint_xy, axis=1)
    z = points[(d >= ring[0]) & (d <= ring[1]), 2]
    z = z[z <= below]
    if len(z) < 20:
        return None
    bins = np.floor(z / 0.005).astype(np.int64)
    values, counts = np.unique(bins, return_counts=True)
    mode = values[np.argmax(counts)]
    near = z[np.abs(bins - mode) <= 1]
    return float(np.median(near))


def estimate_grasp_pose(frame: Frame, hint: Sequence[float], config: GraspPoseConfig = GraspPoseConfig()
                        ) -> GraspPose:
    """The grasp pose of the object near ``hint`` (x, y, z in the frame ``frame``'s pose maps into).

    ``frame.rotation``/``translation`` must map optical-frame points into the output frame (e.g. the
    camera's pose in ``base_link``), whose z axis points up. Never raises on bad input.
    """
    try:
        hint = np.asarray(hint, dtype=np.float64).reshape(3)
        frame.validate()
    except (ValueError, TypeError) as exc:
        return GraspPose(False, f"{BAD_INPUT}: {exc}")
    if not np.all(np.isfinite(hint)):
        return GraspPose(False, f"{BAD_INPUT}: the hint is not finite")
    pts, valid = frame.points_world()
    pts = pts[valid]
    crop = pts[np.linalg.norm(pts[:, :2] - hint[:2], axis=1) <= config.crop_radius]
    if len(crop) < config.min_object_points:
        return GraspPose(False, f"{TARGET_NOT_VISIBLE}: {len(crop)} depth points within "
                                f"{config.crop_radius:g} m of the hint", n_points=len(crop))
    cam = np.asarray(frame.translation, dtype=np.float64)
    sigma = config.depth_sigma_0 + config.depth_k_r2 * float(np.sum((hint - cam) ** 2))   # range noise here
    support = _support_height(crop, hint[:2], config.support_ring, below=hint[2] + 0.02 + 2.0 * sigma)
    if support is None:
        return GraspPose(False, f"{POSE_UNCERTAIN}: no support surface seen around the target", n_points=len(crop))
    min_height = max(config.min_height, 3.0 * sigma)
    above = crop[(crop[:, 2] > support + min_height) & (crop[:, 2] < support + config.max_height)]
    centre_xy = hint[:2].copy()
    obj = above[:0]
    for _ in range(3):   # re-centre on the object's own points: the hint may be a few cm off
        obj = above[np.linalg.norm(above[:, :2] - centre_xy, axis=1) <= config.object_radius]
        if len(obj) < config.min_object_points:
            break
        centre_xy = np.median(obj[:, :2], axis=0)
    if len(obj) < config.min_object_points:
        return GraspPose(False, f"{TARGET_NOT_VISIBLE}: {len(obj)} points above the support near the hint",
                         support_height=support, n_points=len(obj))
    # The top face: its height is the median of the upper points (robust to the noise, which puts
    # the 98th percentile ~2 sigma above the face), its points those within the band of it.
    upper = float(np.percentile(obj[:, 2], 98.0))
    top = float(np.median(obj[obj[:, 2] >= upper - config.top_band - 3.0 * sigma, 2]))
    face = obj[obj[:, 2] >= top - 0.5 * config.top_band - 2.0 * sigma]
    if len(face) < config.min_top_points:
        return GraspPose(False, f"{TOO_FEW_POINTS}: {len(face)} points on the top face", support_height=support,
                         n_points=len(obj))
    centre2, sides, angle, roundness = robust_rectangle(face[:, :2])
    rect_area = sides[0] * sides[1]
    fill = polygon_area(convex_hull(face[:, :2])) / rect_area if rect_area > 0 else 0.0
    height = top - support
    if max(sides) > config.max_footprint or height <= 0:
        return GraspPose(False, f"{POSE_UNCERTAIN}: footprint {sides[0]:.3f} x {sides[1]:.3f} m, height "
                                f"{height:.3f} m is not one graspable object", support_height=support,
                         n_points=len(obj), fill=fill)
    # The top face's far edge borders the background far behind: an RGB-D camera returns nothing
    # there (a depth jump), and the 98th-percentile trim takes a little more, so the face looks
    # shorter on the far side and its centre sits too close to the camera. Move it back by half the
    # lost rows' footprint on the face (measured in home with the depth noise model: -6.7 mm along
    # the view before, about -1 mm after; docs/reference/perception.md).
    ray = centre2 - cam[:2]
    horizontal = float(np.linalg.norm(ray))
    if horizontal > 1e-6 and config.far_edge_px > 0:
        drop = max(float(cam[2] - top), 1e-3)
        rng_m = math.hypot(horizontal, drop)
        footprint = (rng_m / frame.fy) * rng_m / drop      # one image row on a horizontal face, m
        centre2 = centre2 + (ray / horizontal) * 0.5 * config.far_edge_px * footprint
    symmetric = roundness > config.round_above
    # The yaw is the footprint rectangle's even when the footprint reads round: for a real disc any yaw
    # grasps alike, but a cube's small noisy top seen from 1 m reads round view after view, and a yaw
    # of 0 then closed the fingers on its corners (tests/test_fetch_system.py's floor cube: 3 lifts failed).
    yaw = wrap_quarter(angle)
    # footprint along yaw: side a lies along `angle`, which differs from yaw by a multiple of 90 deg
    turns = int(round((angle - yaw) / (math.pi / 2.0))) % 2
    along, across = (sides[0], sides[1]) if turns == 0 else (sides[1], sides[0])
    quality = float(min(1.0, len(face) / 200.0))
    return GraspPose(True, "", np.array([centre2[0], centre2[1], support + 0.5 * height]), yaw,
                     np.array([along, across, height]), support, symmetric, len(obj), float(fill), quality)


@dataclass
class FusedGraspPose:
    pose: GraspPose
    consistent: bool
    spread_m: float          # largest distance of a view's centre from the fused centre
    spread_yaw: float        # largest yaw difference (mod 90 deg) from the fused yaw, rad
    views: int


def fuse_estimates(estimates: Sequence[GraspPose], max_spread_m: float = 0.015,
                   max_spread_yaw: float = math.radians(8.0)) -> FusedGraspPose:
    """Combine the usable estimates of several views (quality-weighted; yaw as a circular mean of
    4 x yaw) and say whether they agree within ``max_spread_m`` / ``max_spread_yaw``."""
    good = [e for e in estimates if e.ok]
    if not good:
        codes = sorted({e.reason.split(":")[0] for e in estimates}) or [TARGET_NOT_VISIBLE]
        detail = "; ".join(e.reason for e in estimates[:3])
        return FusedGraspPose(GraspPose(False, f"{codes[0]}: no usable view of {len(estimates)} ({detail})"),
                              False, math.inf, math.inf, 0)
    w = np.array([max(e.quality, 1e-3) for e in good])
    centre = np.average(np.array([e.centre for e in good]), axis=0, weights=w)
    symmetric = sum(e.symmetric for e in good) * 2 > len(good)
    yaw = wrap_quarter(math.atan2(float(np.average([math.sin(4 * e.yaw) for e in good], weights=w)),
                                  float(np.average([math.cos(4 * e.yaw) for e in good], weights=w))) / 4.0)
    spread = max(float(np.linalg.norm(e.centre - centre)) for e in good)
    spread_yaw = 0.0 if symmetric else max(abs(wrap_quarter(e.yaw - yaw)) for e in good)
    fused = GraspPose(True, "", centre, yaw, np.average(np.array([e.size for e in good]), axis=0, weights=w),
                      float(np.average([e.support_height for e in good], weights=w)), symmetric,
                      int(sum(e.n_points for e in good)), float(np.mean([e.fill for e in good])),
                      float(np.max([e.quality for e in good])))
    consistent = spread <= max_spread_m and spread_yaw <= max_spread_yaw
    if not consistent:
        fused.reason = (f"{POSE_UNCERTAIN}: views disagree by {spread * 100:.1f} cm / "
                        f"{math.degrees(spread_yaw):.0f} deg")
    return FusedGraspPose(fused, consistent, spread, spread_yaw, len(good))
