"""Depth-camera localisation against an occupancy map (pure numpy, no rclpy).

The localiser estimates ``map -> odom``: the correction that puts the drifting wheel odometry
back on the map, as AMCL or slam_toolbox do for Nav2. It works on a *virtual scan*: the head
camera's depth pixels back-projected into ``base_link``, kept within a height band (above the
objects on the floor, below the top of the tallest furniture the map knows), flattened to 2-D and
thinned to one point per map cell.

Matching is scan-to-map registration on a distance field, the approach of Hector SLAM and of
Cartographer's local matcher:

* :class:`ScanMatcher` precomputes, for the map's occupied cells, the distance (m) from every point
  of the plane to the nearest obstacle *surface* (the distance to the nearest occupied cell centre
  less half a cell, 0 inside obstacles), capped at ``max_distance``, with its gradient. A scan at a
  candidate pose scores by the distances its points land at.
* :meth:`ScanMatcher.refine`: Gauss-Newton on ``sum rho(d_i(pose)^2)`` (Huber-weighted), a few
  iterations from the odometry prediction. Directions the scan does not constrain (a view of
  one wall pins the distance to it and the heading but not the position along it) are left where
  odometry put them: the update is solved in the eigenvectors of the Gauss-Newton Hessian (yaw
  scaled to the arc at ``constraint_length``) whose eigenvalue is at least ``min_constraint``
  (about that many points' worth of information).
* :meth:`ScanMatcher.search`: a correlative (brute-force) search over a window of poses, x/y in
  map cells and yaw in steps, for the initial pose, large errors and re-localisation.

:class:`Localizer` is the state machine around it, one :meth:`Localizer.update` per depth frame:

* ``INITIALISING``: no initial pose yet (``/initialpose`` or parameters);
* ``OK``: the last frame matched (inlier ratio >= ``ok_inlier_ratio``);
* ``DEGRADED``: too few depth points to match (a view of nothing, or of the floor): the estimate
  runs on odometry alone and says so;
* ``LOST``: ``lost_after_frames`` frames in a row did not match even after a local search (a wrong
  initial pose, a kidnapped robot). ``map -> odom`` is frozen and every ``lost_search_interval`` s
  a wider search tries to re-localise; ``recover_after_frames`` good matches in a row at
  consistent poses bring it back to ``OK``. A new initial pose restarts from ``INITIALISING``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, fields
from typing import Optional, Tuple

import numpy as np

from rlstack_nav.grid import OccupancyGrid, distance_field

Pose2 = Tuple[float, float, float]

__all__ = ["LocalizerParams", "ScanMatcher", "Localizer", "State", "UpdateResult", "virtual_scan",
           "se2_compose", "se2_inverse", "wrap"]


def wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def se2_compose(a: Pose2, b: Pose2) -> Pose2:
    c, s = math.cos(a[2]), math.sin(a[2])
    return (a[0] + c * b[0] - s * b[1], a[1] + s * b[0] + c * b[1], wrap(a[2] + b[2]))


def se2_inverse(a: Pose2) -> Pose2:
    c, s = math.cos(a[2]), math.sin(a[2])
    return (-c * a[0] - s * a[1], s * a[0] - c * a[1], wrap(-a[2]))


class State(str, enum.Enum):
    INITIALISING = "INITIALISING"
    OK = "OK"
    DEGRADED = "DEGRADED"
    LOST = "LOST"


@dataclass
class LocalizerParams:
    # virtual scan
    min_height: float = 0.12          # m above the floor: lower returns are the floor and objects on it
    max_height: float = 1.5           # m: higher returns are ignored
    min_range: float = 0.2            # m from the camera
    max_range: float = 5.0            # m from the camera
    self_filter_radius: float = 0.55  # m around base_link: the arm and what it holds
    stride: int = 4                   # every stride-th depth pixel
    scan_angle_step: float = 0.01     # rad: bearing bin of the virtual laser scan (nearest surface per bin)
    scan_band: float = 0.03           # m: returns this far behind a bin's nearest one are the same surface
    scan_band_k: float = 0.0075       # 1/m: ... plus this times r^2 (3 sigma of a D435-like camera's noise)
    max_points: int = 300             # thinned scan size
    vertical_only: bool = True        # keep only returns on steep surfaces (walls, furniture sides), as a laser sees
    vertical_rows: int = 2            # compare a return with the one this many (strided) rows above / below
    max_surface_tilt: float = 0.35    # rad from vertical: steeper surfaces count as vertical (20 deg)
    min_points: int = 30              # fewer: DEGRADED (nothing to match)
    # matching
    max_distance: float = 0.5         # m: distance field cap
    huber: float = 0.05               # m: Huber threshold of the residuals
    outlier_distance: float = 0.08    # m: residuals beyond this get no weight (clutter, objects on furniture:
                                      # at 0.15 a brick and a cylinder on a table, 9-14 cm inside its footprint,
                                      # slid a standing robot 8-16 cm; larger errors are the search's job)
    inlier_distance: float = 0.06     # m: a point this close to an obstacle surface is an inlier
    iterations: int = 8               # Gauss-Newton iterations per frame
    min_constraint: float = 3.0       # information (points' worth) a direction needs; less: left to odometry
    constraint_length: float = 2.0    # m: yaw is compared with x/y as the arc at this distance
    correction_gain: float = 0.5      # share of a tracked frame's correction applied (1: all)
    # states
    ok_inlier_ratio: float = 0.6      # inlier share of a good match
    lost_after_frames: int = 5        # bad frames in a row -> LOST
    recover_after_frames: int = 3     # good matches in a row (consistent) -> OK again
    # correlative search
    search_xy: float = 0.6            # m: half-width of the local search window
    search_yaw: float = 0.4           # rad: half-width of the local search window
    search_yaw_step: float = 0.035    # rad
    search_sigma: float = 0.1         # m: width of the search score's kernel
    lost_search_xy: float = 1.0       # m, while LOST
    lost_search_yaw: float = 0.8      # rad, while LOST
    lost_search_interval: float = 1.0  # s of scan time between searches while LOST
    # covariance
    min_xy_std: float = 0.01          # m
    min_yaw_std: float = 0.005        # rad

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not (isinstance(v, (int, float)) and math.isfinite(v)):
                raise ValueError(f"{f.name} must be a finite number, got {v!r}")
            if v < 0:
                raise ValueError(f"{f.name} must be >= 0, got {v!r}")
        if self.max_height <= self.min_height:
            raise ValueError("max_height must be above min_height")
        if self.max_range <= self.min_range:
            raise ValueError("max_range must be above min_range")
        if not 0.0 < self.correction_gain <= 1.0:
            raise ValueError("correction_gain must be in (0, 1]")
        if not 0.0 < self.ok_inlier_ratio <= 1.0:
            raise ValueError("ok_inlier_ratio must be in (0, 1]")
        if self.vertical_rows < 1 or self.max_surface_tilt >= math.pi / 2:
            raise ValueError("vertical_rows must be >= 1 and max_surface_tilt below pi/2")
        if self.stride < 1 or self.lost_after_frames < 1 or self.recover_after_frames < 1 or self.max_points < 1:
            raise ValueError("stride, max_points, lost_after_frames and recover_after_frames must be >= 1")
        if self.scan_angle_step <= 0:
            raise ValueError("scan_angle_step must be > 0")
        if self.outlier_distance < self.huber:
            raise ValueError("outlier_distance must be >= huber")
        if self.search_yaw_step <= 0 or self.huber <= 0 or self.search_sigma <= 0 or self.inlier_distance <= 0:
            raise ValueError("search_yaw_step, huber, search_sigma and inlier_distance must be > 0")


def _on_steep_surface(pts: np.ndarray, z: np.ndarray, p: LocalizerParams) -> np.ndarray:
    """(rows, cols) mask of returns on a steep surface: a wall, the side of a piece of furniture.

    A laser at one height sees only vertical structure; a camera looking down also sees
    horizontal surfaces (a table top, from its near edge back), and their returns lie *inside*
    the furniture's map footprint: at the edge of the camera's view or at a grazing angle along a
    side, the nearest return of a bearing was centimetres inside it and pulled the estimate that
    way (5-7 cm at a table's staging pose, exact or noisy depth). A return is kept when the one
    ``vertical_rows`` rows above or below it in the image lies nearly straight above / below it:
    horizontal offset within ``tan(max_surface_tilt)`` times the height difference, plus the
    depth noise of both (``scan_band_k`` r^2, 3 sigma)."""
    k = int(p.vertical_rows)
    steep = np.zeros(z.shape, bool)
    if z.shape[0] <= k:
        return steep
    a, b = pts[:-k], pts[k:]                                   # each return and the one k rows below
    dxy = np.hypot(a[..., 0] - b[..., 0], a[..., 1] - b[..., 1])
    dh = np.abs(a[..., 2] - b[..., 2])
    allow = math.tan(p.max_surface_tilt) * dh + p.scan_band_k * (z[:-k] ** 2 + z[k:] ** 2)
    pair = dxy <= allow                                        # NaN (no return) compares False
    steep[:-k] |= pair
    steep[k:] |= pair
    return steep


def virtual_scan(depth: np.ndarray, fx: float, fy: float, cx: float, cy: float, base_from_optical: np.ndarray,
                 base_height: float, params: LocalizerParams, cell: float = 0.05) -> np.ndarray:  # noqa: ARG001
    """Depth image (optical-axis metres, NaN = no return) -> (N, 2) points in ``base_link``.

    ``base_from_optical``: 4x4 pose of the optical frame in ``base_link``; ``base_height``: height
    of ``base_link`` above the floor (m). Keeps returns on steep surfaces (``vertical_only``), within
    the height band and outside the self-filter circle, the nearest per ``scan_angle_step`` of
    bearing (a virtual laser scan), at most ``max_points``. ``cell`` is unused (kept for callers).
    """
    d = np.asarray(depth, np.float32)
    if d.ndim != 2:
        raise ValueError(f"depth must be a 2-D image, got shape {d.shape}")
    p = params
    s = int(p.stride)
    v, u = np.mgrid[0:d.shape[0]:s, 0:d.shape[1]:s]          # the strided grid, (rows, cols)
    z = d[v, u].astype(np.float64)
    ok = np.isfinite(z) & (z >= p.min_range) & (z <= p.max_range)
    z = np.where(ok, z, np.nan)
    pts = np.stack([(u - cx) * z / fx, (v - cy) * z / fy, z], axis=-1)
    m = np.asarray(base_from_optical, float)
    pts = pts @ m[:3, :3].T + m[:3, 3]                        # (rows, cols, 3) in base_link
    if p.vertical_only:
        ok &= _on_steep_surface(pts, z, p)
    pts = pts[ok]
    h = pts[:, 2] + base_height
    r2 = pts[:, 0] ** 2 + pts[:, 1] ** 2
    keep = (h >= p.min_height) & (h <= p.max_height) & (r2 >= p.self_filter_radius ** 2)
    xy = pts[keep, :2]
    if len(xy) == 0:
        return np.zeros((0, 2))
    # a laser-like scan: per bearing bin, the surface nearest to the robot. What lies behind it
    # (the top of a table seen from above, objects on it, the wall behind) is dropped: the top of
    # a box is inside its map footprint, not on the footprint's edge. The nearest *single* return
    # of a noisy depth camera is biased short (the minimum of many noisy samples), so the bin's
    # point is the median of the returns within a band behind the nearest one, as wide as the
    # depth noise at that range (scan_band + scan_band_k r^2).
    r = np.sqrt(r2[keep])
    bins = np.floor(np.arctan2(xy[:, 1], xy[:, 0]) / p.scan_angle_step).astype(np.int64)
    order = np.lexsort((r, bins))
    b, rs, pts2 = bins[order], r[order], xy[order]
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    counts = np.diff(np.r_[starts, len(b)])
    seg = np.repeat(np.arange(len(starts)), counts)
    r_near = rs[starts][seg]
    within = rs <= r_near + p.scan_band + p.scan_band_k * r_near ** 2
    # median of the in-band returns per bin: sorted by range already, take the middle one
    n_in = np.bincount(seg, weights=within, minlength=len(starts)).astype(np.int64)
    xy = pts2[starts + (n_in - 1) // 2]
    if len(xy) > p.max_points:
        xy = xy[np.linspace(0, len(xy) - 1, p.max_points).astype(int)]
    return xy


class ScanMatcher:
    """Scan-to-map matching on the map's distance field (see the module docstring)."""

    def __init__(self, grid: OccupancyGrid, params: LocalizerParams) -> None:
        if abs(grid.origin[2]) > 1e-9:
            raise ValueError("maps with a rotated origin are not supported by the localiser")
        self.grid, self.params = grid, params
        occ = grid.occupied_mask()
        if not occ.any():
            raise ValueError("the map has no occupied cells: nothing to localise against")
        res = grid.resolution
        # signed distance to the obstacle surface: + outside, - inside (cell centres are half a cell
        # from the surface between an occupied and a free cell, so bilinear interpolation puts
        # the zero crossing on the surface)
        outside = distance_field(occ, res, params.max_distance + res) - 0.5 * res
        inside = distance_field(~occ, res, params.max_distance + res) - 0.5 * res
        self.field = np.clip(np.where(occ, -inside, outside), -params.max_distance, params.max_distance)
        gy, gx = np.gradient(self.field, res)                           # rows = y, cols = x
        self.gx, self.gy = gx, gy
        self.res = res
        self.ox, self.oy = grid.origin[0], grid.origin[1]
        k = params.search_sigma
        self.score_field = np.exp(-0.5 * (self.field / k) ** 2)
        self.score_field[self.field < -2 * k] = 0.0     # deep inside an obstacle is no match

    # -------------------------------------------------------------- lookups
    def _bilinear(self, arrays, x: np.ndarray, y: np.ndarray):
        h, w = self.field.shape
        fc = (x - self.ox) / self.res - 0.5
        fr = (y - self.oy) / self.res - 0.5
        c0 = np.clip(np.floor(fc).astype(np.int64), 0, w - 2)
        r0 = np.clip(np.floor(fr).astype(np.int64), 0, h - 2)
        ac = np.clip(fc - c0, 0.0, 1.0)
        ar = np.clip(fr - r0, 0.0, 1.0)
        out = []
        for a in arrays:
            out.append((a[r0, c0] * (1 - ac) + a[r0, c0 + 1] * ac) * (1 - ar)
                       + (a[r0 + 1, c0] * (1 - ac) + a[r0 + 1, c0 + 1] * ac) * ar)
        return out

    def distances(self, pose: Pose2, pts: np.ndarray) -> np.ndarray:
        c, s = math.cos(pose[2]), math.sin(pose[2])
        x = pose[0] + c * pts[:, 0] - s * pts[:, 1]
        y = pose[1] + s * pts[:, 0] + c * pts[:, 1]
        return self._bilinear([self.field], x, y)[0]

    def inlier_ratio(self, pose: Pose2, pts: np.ndarray) -> float:
        if len(pts) == 0:
            return 0.0
        return float(np.mean(np.abs(self.distances(pose, pts)) <= self.params.inlier_distance))

    # -------------------------------------------------------------- Gauss-Newton
    def refine(self, pose: Pose2, pts: np.ndarray) -> Tuple[Pose2, np.ndarray, float]:
        """Gauss-Newton from ``pose``. Returns (pose, 3x3 covariance, inlier ratio)."""
        p = self.params
        x, y, th = pose
        hess = np.eye(3) * 1e-9
        resid = np.zeros(len(pts))
        for _ in range(max(1, int(p.iterations))):
            c, s = math.cos(th), math.sin(th)
            px = x + c * pts[:, 0] - s * pts[:, 1]
            py = y + s * pts[:, 0] + c * pts[:, 1]
            d, gx, gy = self._bilinear([self.field, self.gx, self.gy], px, py)
            dth = gx * (-s * pts[:, 0] - c * pts[:, 1]) + gy * (c * pts[:, 0] - s * pts[:, 1])
            jac = np.column_stack([gx, gy, dth])
            ad = np.abs(d)
            w = np.where(ad <= p.huber, 1.0, p.huber / np.maximum(ad, 1e-12))
            # Far from every surface of the map (an object on a table, a chair): no weight at all.
            # Huber alone kept pulling: with the table top out of the scan, two returns of objects
            # on a table, 18 cm inside its footprint, slid a stationary robot's estimate 21 cm
            # along a wall that constrained nothing else (seen in a fetch). A pose that far
            # off is the correlative search's job, not Gauss-Newton's.
            w = np.where(ad > p.outlier_distance, 0.0, w)
            w = np.where(ad >= p.max_distance - 1e-9, 0.0, w)          # beyond the field: no information
            hess = (jac * w[:, None]).T @ jac
            grad = (jac * w[:, None]).T @ d
            resid = d
            dmat = np.diag([1.0, 1.0, 1.0 / p.constraint_length])
            evals, evecs = np.linalg.eigh(dmat @ hess @ dmat)
            keep = evals >= max(p.min_constraint, 1e-9)
            if not keep.any():
                break
            coeff = evecs.T @ (dmat @ grad)
            step = -(dmat @ (evecs[:, keep] @ (coeff[keep] / evals[keep])))
            step[:2] = np.clip(step[:2], -0.1, 0.1)
            step[2] = float(np.clip(step[2], -0.1, 0.1))
            x, y, th = x + float(step[0]), y + float(step[1]), wrap(th + float(step[2]))
            if np.linalg.norm(step[:2]) < 1e-4 and abs(step[2]) < 1e-4:
                break
        inliers = float(np.mean(np.abs(resid) <= p.inlier_distance)) if len(resid) else 0.0
        cov = self._covariance(hess, resid, len(pts))
        return (x, y, th), cov, inliers

    def _covariance(self, hess: np.ndarray, resid: np.ndarray, n: int) -> np.ndarray:
        p = self.params
        sigma2 = float(np.mean(np.minimum(np.abs(resid), p.huber) ** 2)) if n else p.huber ** 2
        sigma2 = max(sigma2, 1e-6)
        dmat = np.diag([1.0, 1.0, 1.0 / p.constraint_length])
        evals, evecs = np.linalg.eigh(dmat @ hess @ dmat)
        # unconstrained directions get a large variance (the odometry's, unknown here): 1 m^2
        inv = np.where(evals >= max(p.min_constraint, 1e-9), sigma2 / np.maximum(evals, 1e-12), 1.0)
        cov = dmat @ evecs @ np.diag(inv) @ evecs.T @ dmat
        cov[0, 0] = max(cov[0, 0], p.min_xy_std ** 2)
        cov[1, 1] = max(cov[1, 1], p.min_xy_std ** 2)
        cov[2, 2] = max(cov[2, 2], p.min_yaw_std ** 2)
        return cov

    def unconstrained(self, cov: np.ndarray) -> bool:
        """True when the covariance says some direction was left to odometry."""
        return bool(np.max(np.linalg.eigvalsh(cov)) >= 0.1)

    # -------------------------------------------------------------- correlative search
    def search(self, pose: Pose2, pts: np.ndarray, half_xy: float, half_yaw: float) -> Tuple[Pose2, float]:
        """Best pose (by the kernel score) in the window; x/y in whole map cells around ``pose``."""
        p = self.params
        if len(pts) == 0:
            return pose, 0.0
        k = int(round(half_xy / self.res))
        n_yaw = int(math.floor(half_yaw / p.search_yaw_step))
        offs = np.arange(-k, k + 1)
        h, w = self.score_field.shape
        pad = k + 1
        sf = np.pad(self.score_field, pad, constant_values=0.0)
        best, best_pose = -1.0, pose
        for j in range(-n_yaw, n_yaw + 1):
            th = wrap(pose[2] + j * p.search_yaw_step)
            c, s = math.cos(th), math.sin(th)
            px = pose[0] + c * pts[:, 0] - s * pts[:, 1]
            py = pose[1] + s * pts[:, 0] + c * pts[:, 1]
            col = np.floor((px - self.ox) / self.res).astype(np.int64)
            row = np.floor((py - self.oy) / self.res).astype(np.int64)
            col = np.clip(col, -pad, w + pad - 1) + pad
            row = np.clip(row, -pad, h + pad - 1) + pad
            rr = np.clip(row[:, None, None] + offs[None, :, None], 0, h + 2 * pad - 1)
            cc = np.clip(col[:, None, None] + offs[None, None, :], 0, w + 2 * pad - 1)
            scores = sf[rr, cc].mean(axis=0)               # (dy, dx)
            i = int(np.argmax(scores))
            if scores.flat[i] > best:
                best = float(scores.flat[i])
                dy, dx = offs[i // len(offs)], offs[i % len(offs)]
                best_pose = (pose[0] + dx * self.res, pose[1] + dy * self.res, th)
        return best_pose, best


@dataclass
class UpdateResult:
    state: State
    pose: Optional[Pose2]                 # base_link in map (None before an initial pose)
    covariance: np.ndarray                # 3x3 (x, y, yaw)
    inlier_ratio: float
    points: int
    reason: str
    searched: bool = False


class Localizer:
    """The localisation state machine (see the module docstring). Works in SE(2)."""

    def __init__(self, grid: OccupancyGrid, params: LocalizerParams = LocalizerParams()) -> None:
        self.params = params
        self.matcher = ScanMatcher(grid, params)
        self.grid = grid
        self.state = State.INITIALISING
        self.reason = "no initial pose yet (publish /initialpose or set the initial_pose parameters)"
        self.map_to_odom: Optional[Pose2] = None
        self.cov = np.diag([1.0, 1.0, 1.0])
        self.bad_frames = 0
        self.good_streak = 0
        self.last_good: Optional[Pose2] = None
        self.needs_search = False
        self.last_search_stamp = -math.inf
        self.last_inlier_ratio = 0.0
        self.counts = {"frames": 0, "searches": 0, "lost_events": 0, "recoveries": 0}

    # ------------------------------------------------------------ inputs
    def set_initial_pose(self, map_pose: Pose2, odom_pose: Pose2,
                         covariance: Optional[np.ndarray] = None) -> None:
        """The robot (base_link) is at ``map_pose`` while odometry says ``odom_pose``."""
        if not all(math.isfinite(float(v)) for v in (*map_pose, *odom_pose)):
            raise ValueError(f"initial pose must be finite, got {map_pose} / {odom_pose}")
        self.map_to_odom = se2_compose(tuple(map(float, map_pose)), se2_inverse(tuple(map(float, odom_pose))))
        self.cov = np.array(covariance, float) if covariance is not None else np.diag([0.25, 0.25, 0.12])
        self.state = State.INITIALISING
        self.reason = "initial pose set; waiting for a depth frame to confirm it"
        self.bad_frames = self.good_streak = 0
        self.needs_search = True
        self.last_search_stamp = -math.inf

    def pose(self, odom_pose: Pose2) -> Optional[Pose2]:
        if self.map_to_odom is None:
            return None
        return se2_compose(self.map_to_odom, odom_pose)

    # ------------------------------------------------------------ one depth frame
    def update(self, scan: np.ndarray, odom_pose: Pose2, stamp: float) -> UpdateResult:
        """``scan``: (N, 2) virtual scan in base_link; ``odom_pose``: base_link in odom at the scan's time."""
        p = self.params
        self.counts["frames"] += 1
        scan = np.asarray(scan, float).reshape(-1, 2)
        if self.map_to_odom is None:
            return self._result(None, 0.0, len(scan))
        predicted = self.pose(odom_pose)
        if len(scan) < p.min_points:
            if self.state in (State.OK, State.DEGRADED):
                self.state = State.DEGRADED
                self.reason = (f"{len(scan)} depth points in the height band (< {p.min_points}): "
                               f"running on odometry")
            return self._result(predicted, self.last_inlier_ratio, len(scan))

        searched = False
        if self.state == State.LOST:
            if stamp - self.last_search_stamp < p.lost_search_interval:
                return self._result(predicted, self.last_inlier_ratio, len(scan))
            start, _ = self.matcher.search(predicted, scan, p.lost_search_xy, p.lost_search_yaw)
            self.last_search_stamp = stamp
            self.counts["searches"] += 1
            searched = True
            pose, cov, ratio = self.matcher.refine(start, scan)
        else:
            pose, cov, ratio = self.matcher.refine(predicted, scan)
            if ratio < p.ok_inlier_ratio or self.needs_search:
                start, _ = self.matcher.search(predicted, scan, p.search_xy, p.search_yaw)
                self.counts["searches"] += 1
                searched = True
                pose2, cov2, ratio2 = self.matcher.refine(start, scan)
                if ratio2 > ratio:
                    pose, cov, ratio = pose2, cov2, ratio2
        self.last_inlier_ratio = ratio
        good = ratio >= p.ok_inlier_ratio

        if self.state == State.LOST:
            if good and (self.last_good is None or self._close(self.last_good, se2_compose(
                    se2_inverse(odom_pose), pose), 0.1, 0.1)):
                self.good_streak += 1
            else:
                self.good_streak = 1 if good else 0
            self.last_good = se2_compose(se2_inverse(odom_pose), pose) if good else None
            if self.good_streak >= p.recover_after_frames:
                self._accept(pose, odom_pose, cov, gain=1.0)
                self.state = State.OK
                self.counts["recoveries"] += 1
                self.reason = f"re-localised (inlier ratio {ratio:.2f})"
            else:
                # keep searching every frame while a candidate is being confirmed
                if good:
                    self.last_search_stamp = -math.inf
            return self._result(self.pose(odom_pose), ratio, len(scan), searched)

        if good:
            jump = searched or self.state == State.INITIALISING
            self._accept(pose, odom_pose, cov, gain=1.0 if jump else p.correction_gain)
            self.state = State.OK
            self.needs_search = False
            self.bad_frames = 0
            self.reason = f"matched: inlier ratio {ratio:.2f}"
            if self.matcher.unconstrained(cov):
                self.state = State.DEGRADED
                self.reason = (f"matched (inlier ratio {ratio:.2f}) but the view constrains only part of the "
                               f"pose (e.g. a single wall): the rest runs on odometry")
        else:
            self.bad_frames += 1
            self.reason = (f"poor match: inlier ratio {ratio:.2f} < {p.ok_inlier_ratio:.2f} "
                           f"({self.bad_frames} frame(s) in a row)")
            if self.bad_frames >= p.lost_after_frames:
                self.state = State.LOST
                self.counts["lost_events"] += 1
                self.good_streak = 0
                self.last_good = None
                self.last_search_stamp = stamp
                self.reason = (f"LOST: inlier ratio {ratio:.2f} < {p.ok_inlier_ratio:.2f} for {self.bad_frames} "
                               f"frames after a local search (+-{p.search_xy:g} m, +-{math.degrees(p.search_yaw):.0f}"
                               f" deg): wrong initial pose or moved robot; give /initialpose")
        return self._result(self.pose(odom_pose), ratio, len(scan), searched)

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _close(a: Pose2, b: Pose2, dxy: float, dyaw: float) -> bool:
        return math.hypot(a[0] - b[0], a[1] - b[1]) <= dxy and abs(wrap(a[2] - b[2])) <= dyaw

    def _accept(self, pose: Pose2, odom_pose: Pose2, cov: np.ndarray, gain: float) -> None:
        measured = se2_compose(pose, se2_inverse(odom_pose))
        if gain >= 1.0 or self.map_to_odom is None:
            self.map_to_odom = measured
        else:
            old = self.map_to_odom
            self.map_to_odom = (old[0] + gain * (measured[0] - old[0]), old[1] + gain * (measured[1] - old[1]),
                                wrap(old[2] + gain * wrap(measured[2] - old[2])))
        self.cov = cov

    def _result(self, pose: Optional[Pose2], ratio: float, n: int, searched: bool = False) -> UpdateResult:
        return UpdateResult(self.state, pose, self.cov.copy(), ratio, n, self.reason, searched)
