"""The localizer node's bookkeeping around :class:`rlstack_localization.core.Localizer` (no rclpy).

:class:`LocalizerNodeCore` is what :mod:`rlstack_localization.localizer_node` decides, without ROS:
the odometry history (interpolated to each depth frame's time), the static transforms to the
camera, the initial pose (parameters or /initialpose, held until the first odometry), depth frames
into the localiser, the state text, rejected-input accounting and the diagnostics values. It talks
back through :class:`LocalizerOutputs` and logs through the ``info``/``warning`` callables.
:data:`CORE_PARAMS` describes every :class:`LocalizerParams` field the node declares.
"""

from __future__ import annotations

import bisect
import math
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, Optional, Sequence, Tuple

import numpy as np

from rlstack_localization.core import Localizer, LocalizerParams, State, se2_compose, virtual_scan
from rlstack_nav.obstacles import yaw_from_quat
from rlstack_nav.transforms import static_chain

__all__ = ["CORE_PARAMS", "LocalizerNodeCore", "LocalizerOutputs", "WARN_PERIOD_S"]

WARN_PERIOD_S = 5.0
Pose2 = Tuple[float, float, float]
Quat = Sequence[float]   # x, y, z, w
Log = Callable[[str], None]

#: LocalizerParams field -> (description, min, max)
CORE_PARAMS = {
    "min_height": ("Virtual scan: lowest return kept, m above the floor (objects on the floor are lower)", 0.0, 5.0),
    "max_height": ("Virtual scan: highest return kept, m above the floor", 0.0, 10.0),
    "min_range": ("Virtual scan: nearest depth used, m", 0.0, 20.0),
    "max_range": ("Virtual scan: farthest depth used, m", 0.0, 50.0),
    "self_filter_radius": ("Virtual scan: returns within this radius of base_link are the robot, m", 0.0, 5.0),
    "stride": ("Virtual scan: use every stride-th depth pixel", 1, 64),
    "scan_angle_step": ("Virtual scan: bearing bin, the nearest return per bin is kept, rad", 0.001, 0.5),
    "scan_band": ("Virtual scan: returns this far behind a bin's nearest one count as its surface (median), m",
                  0.0, 1.0),
    "scan_band_k": ("Virtual scan: the band grows by this times range^2 (depth noise), 1/m", 0.0, 1.0),
    "max_points": ("Virtual scan: at most this many points (one per map cell)", 1, 100000),
    "vertical_only": ("Virtual scan: keep only returns on steep surfaces (walls, furniture sides), as a laser "
                      "sees; a table top seen from above lies inside the table's map footprint", None, None),
    "vertical_rows": ("Virtual scan: a return is compared with the one this many strided rows above / below", 1, 16),
    "max_surface_tilt": ("Virtual scan: surfaces within this angle of vertical count as steep, rad", 0.0, 1.5),
    "min_points": ("Fewer scan points than this: DEGRADED, odometry only", 0, 100000),
    "max_distance": ("Distance field cap, m", 0.05, 10.0),
    "huber": ("Huber threshold of the match residuals, m", 0.001, 1.0),
    "outlier_distance": ("Match residuals beyond this get no weight (clutter, objects on furniture), m", 0.001, 5.0),
    "inlier_distance": ("A point this close to an obstacle surface is an inlier, m", 0.001, 1.0),
    "iterations": ("Gauss-Newton iterations per frame", 1, 100),
    "min_constraint": ("Information (points' worth) a pose direction needs to be corrected; less: odometry",
                       0.0, 1e6),
    "constraint_length": ("Yaw is weighed as the arc at this distance when judging constraints, m", 0.01, 100.0),
    "correction_gain": ("Share of a tracked frame's correction applied (1: all; jumps after a search: all)",
                        0.01, 1.0),
    "ok_inlier_ratio": ("Inlier share of a good match", 0.01, 1.0),
    "lost_after_frames": ("Bad matches in a row (after a local search) before LOST", 1, 1000),
    "recover_after_frames": ("Consistent good matches in a row that end LOST", 1, 1000),
    "search_xy": ("Local correlative search half-width, m", 0.0, 10.0),
    "search_yaw": ("Local correlative search half-width, rad", 0.0, math.pi),
    "search_yaw_step": ("Correlative search yaw step, rad", 0.001, 1.0),
    "search_sigma": ("Correlative search kernel width, m", 0.001, 1.0),
    "lost_search_xy": ("Search half-width while LOST, m", 0.0, 20.0),
    "lost_search_yaw": ("Search half-width while LOST, rad", 0.0, math.pi),
    "lost_search_interval": ("Seconds of scan time between searches while LOST", 0.0, 3600.0),
    "min_xy_std": ("Floor of the published x/y standard deviation, m", 0.0, 10.0),
    "min_yaw_std": ("Floor of the published yaw standard deviation, rad", 0.0, 10.0),
}


class LocalizerOutputs:
    """What the core asks of the node (default: nothing; the node overrides all three)."""

    def state(self, text: str) -> None:
        """Publish the state text (called only when it changed)."""

    def transform(self) -> None:
        """Publish map -> odom now."""

    def pose(self, result, stamp: Any) -> None:
        """Publish a frame's pose estimate (``stamp``: the depth image's header stamp)."""


def _finite(values) -> bool:
    return all(math.isfinite(v) for v in values)


class LocalizerNodeCore:
    """Inputs -> :class:`Localizer`, and the node's state.

    :param initial_pose: the map pose to start from at the first odometry (None: wait for /initialpose)
    :param update_rate: depth frames processed per second of frame time (at most)
    """

    def __init__(self, loc: Localizer, params: LocalizerParams, cell: float, map_frame: str, base_frame: str,
                 update_rate: float, initial_pose: Optional[Pose2], out: LocalizerOutputs, info: Log,
                 warning: Log) -> None:
        self.loc, self.params, self.cell, self.out = loc, params, cell, out
        self.map_frame, self.base_frame, self.update_rate = map_frame, base_frame, update_rate
        self._info, self._warning = info, warning
        self.odom_history: Deque[Tuple[float, Pose2]] = deque(maxlen=600)
        self.odom_stamp = -math.inf
        self.base_z = 0.0
        self.static_tf: Dict[str, Tuple[str, np.ndarray]] = {}
        self.camera: Optional[Tuple[float, float, float, float]] = None
        self.last_frame_stamp = -math.inf
        self.pending_initial: Optional[Tuple[Pose2, Optional[np.ndarray], str]] = None
        self.pending_resume: Optional[Tuple[Pose2, float, str]] = None
        if initial_pose is not None:
            self.pending_initial = (initial_pose, None, "parameters")
        self.rejected: Dict[str, int] = {}
        self._last_warn: Dict[str, float] = {}
        self.update_times: Deque[float] = deque(maxlen=500)
        self.updates = 0
        self.last_result = None
        self.last_state_text = ""

    # ------------------------------------------------------------------ bookkeeping
    def reject(self, what: str, kind: str, message: str) -> None:
        key = f"{what}.{kind}"
        self.rejected[key] = self.rejected.get(key, 0) + 1
        now = time.monotonic()
        if now - self._last_warn.get(key, -math.inf) >= WARN_PERIOD_S:
            self._last_warn[key] = now
            self._warning(f"rejected {what} ({kind}): {message} ({self.rejected[key]} so far)")

    def odom_at(self, stamp: float) -> Optional[Pose2]:
        """base_link in odom at ``stamp``: interpolated in the history (nearest end outside it)."""
        h = self.odom_history
        if not h:
            return None
        stamps = [e[0] for e in h]
        i = bisect.bisect_left(stamps, stamp)
        if i <= 0:
            return h[0][1]
        if i >= len(h):
            return h[-1][1]
        (t0, a), (t1, b) = h[i - 1], h[i]
        f = (stamp - t0) / (t1 - t0) if t1 > t0 else 0.0
        dyaw = math.atan2(math.sin(b[2] - a[2]), math.cos(b[2] - a[2]))
        return (a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * dyaw)

    def static_transform(self, parent: str, child: str, matrix: np.ndarray) -> None:
        self.static_tf[child] = (parent, matrix)

    def chain(self, frame: str) -> Optional[np.ndarray]:
        """Pose of ``frame`` in base_frame from /tf_static (None while not connected)."""
        return static_chain(self.static_tf, self.base_frame, frame, max_links=19)

    # ------------------------------------------------------------------ inputs
    def odometry(self, x: float, y: float, z: float, q: Quat, stamp: float) -> None:
        if not _finite((x, y, z, *q)) or (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]) < 1e-12:
            self.reject("odom", "non_finite", "pose is not finite or has a zero quaternion")
            return
        if self.odom_history and stamp < self.odom_history[-1][0]:
            self.odom_history.clear()    # time went back (a sim reset): start over
        pose = (x, y, yaw_from_quat(tuple(q)))
        self.odom_history.append((stamp, pose))
        self.odom_stamp = stamp
        self.base_z = z
        if self.pending_resume is not None:
            m2o, saved_stamp, source = self.pending_resume
            self.pending_resume = None
            if stamp >= saved_stamp:
                # the robot kept driving on odometry while no localiser ran: the last correction
                # (map -> odom) composed with the odometry of now places it
                self.pending_initial = None
                self.apply_initial_pose(se2_compose(m2o, pose), None, source)
                return
            self._info(f"{source} ignored: its odometry stamp {saved_stamp:.1f} s is after this odometry's "
                       f"{stamp:.1f} s (another run, or a reset)")
        if self.pending_initial is not None:
            map_pose, cov, source = self.pending_initial
            self.pending_initial = None
            self.apply_initial_pose(map_pose, cov, source)

    def resume(self, map_to_odom: Pose2, odom_stamp: float, source: str) -> None:
        """Start from a saved ``map -> odom`` (a respawned localiser: :mod:`rlstack_localization.last_pose`)
        at the first odometry, unless that odometry is older than ``odom_stamp`` (time went back)."""
        if not _finite(map_to_odom) or not math.isfinite(odom_stamp):
            self.reject("last_pose", "non_finite", f"saved map -> odom {map_to_odom} at {odom_stamp}")
            return
        self.pending_resume = (tuple(map(float, map_to_odom)), float(odom_stamp), source)

    def set_camera(self, k: Sequence[float]) -> None:
        if not _finite(k) or k[0] <= 0 or k[4] <= 0:
            self.reject("camera_info", "bad_intrinsics", "non-finite or non-positive focal length")
            return
        self.camera = (k[0], k[4], k[2], k[5])

    def initial_pose(self, frame_id: str, x: float, y: float, z: float, q: Quat,
                     covariance: Sequence[float]) -> None:
        """/initialpose (rviz "2D Pose Estimate"): checked, then applied (or held until odometry)."""
        if frame_id.lstrip("/") != self.map_frame:
            self.reject("initialpose", "wrong_frame",
                        f"frame '{frame_id}' (the initial pose must be in '{self.map_frame}')")
            return
        vals = (x, y, z, *q)
        if not _finite(vals):
            self.reject("initialpose", "non_finite", f"pose has NaN/inf: {vals}")
            return
        if q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] < 1e-12:
            self.reject("initialpose", "zero_quaternion", "orientation is a zero quaternion")
            return
        cov6 = np.asarray(covariance, float).reshape(6, 6)
        cov = None
        if np.all(np.isfinite(cov6)) and np.any(cov6 != 0):
            idx = [0, 1, 5]
            cov = cov6[np.ix_(idx, idx)]
        map_pose = (x, y, yaw_from_quat(tuple(q)))
        if not self.odom_history:
            self.pending_initial = (map_pose, cov, "/initialpose")
            self._info("initial pose received before any odometry: applied at the first /odom")
            return
        self.apply_initial_pose(map_pose, cov, "/initialpose")

    def apply_initial_pose(self, map_pose: Pose2, cov, source: str) -> None:
        odom_pose = self.odom_history[-1][1]
        self.loc.set_initial_pose(map_pose, odom_pose, cov)
        self._info(f"initial pose ({map_pose[0]:.3f}, {map_pose[1]:.3f}, {map_pose[2]:.3f}) from {source}")
        self.publish_state()
        self.out.transform()

    def depth(self, stamp: float, header_stamp: Any, frame_id: str, encoding: str, width: int, height: int,
              step: int, bigendian: bool, data) -> None:
        """A depth image (32FC1, metres): a virtual scan matched against the map."""
        if stamp < self.last_frame_stamp:      # time went back (a reset)
            self.last_frame_stamp = -math.inf
        if stamp - self.last_frame_stamp < 1.0 / self.update_rate:
            return
        if self.camera is None or not self.odom_history:
            return
        if encoding != "32FC1":
            self.reject("depth", "encoding", f"encoding {encoding} (need 32FC1)")
            return
        if step < width * 4 or len(data) < step * height or height == 0:
            self.reject("depth", "size", "image data shorter than width x height")
            return
        base_cam = self.chain(frame_id)
        if base_cam is None:
            self.reject("depth", "no_transform", f"no static transform {self.base_frame} -> {frame_id}")
            return
        self.last_frame_stamp = stamp
        t0 = time.perf_counter()
        dtype = np.dtype(">f4") if bigendian else np.dtype("<f4")
        rows = np.frombuffer(bytes(data), dtype=np.uint8).reshape(height, step)
        depth = rows[:, :width * 4].copy().view(dtype).reshape(height, width)
        fx, fy, cx, cy = self.camera
        odom_pose = self.odom_at(stamp)
        before = self.loc.state
        try:
            scan = virtual_scan(depth, fx, fy, cx, cy, base_cam, self.base_z, self.params, self.cell)
            result = self.loc.update(scan, odom_pose, stamp)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:   # never crash on a frame
            self.reject("depth", "processing_error", str(exc))
            return
        self.update_times.append(time.perf_counter() - t0)
        self.updates += 1
        self.last_result = result
        if result.state != before:   # two call sites: rclpy refuses one call site at two severities
            text = f"localisation {before.value} -> {result.state.value}: {result.reason}"
            if result.state in (State.LOST, State.DEGRADED):
                self._warning(text)
            else:
                self._info(text)
        self.publish_state()
        if result.pose is not None:
            self.out.pose(result, header_stamp)

    # ------------------------------------------------------------------ outputs
    def state_text(self) -> str:
        s = self.loc.state
        return s.value if s == State.OK else f"{s.value}: {self.loc.reason}"

    def publish_state(self) -> None:
        text = self.state_text()
        if text != self.last_state_text:
            self.last_state_text = text
            self.out.state(text)

    def diagnostics(self) -> Tuple[State, str, Dict[str, str]]:
        """(state, message, key -> value) of the localisation status."""
        times = np.array(self.update_times) * 1e3 if self.update_times else np.zeros(1)
        r = self.last_result
        state = self.loc.state
        values = {
            "state": state.value,
            "reason": self.loc.reason,
            "inlier_ratio": f"{r.inlier_ratio:.3f}" if r else "",
            "scan_points": str(r.points) if r else "0",
            "updates": str(self.updates),
            "update_ms_median": f"{float(np.median(times)):.2f}",
            "update_ms_p95": f"{float(np.percentile(times, 95)):.2f}",
            "searches": str(self.loc.counts["searches"]),
            "lost_events": str(self.loc.counts["lost_events"]),
            "recoveries": str(self.loc.counts["recoveries"]),
            "rejected_total": str(sum(self.rejected.values())),
        }
        if self.loc.map_to_odom is not None:
            values["map_to_odom"] = "%.3f %.3f %.4f" % self.loc.map_to_odom
        for key, count in sorted(self.rejected.items()):
            values[f"rejected.{key}"] = str(count)
        return state, self.state_text(), values
