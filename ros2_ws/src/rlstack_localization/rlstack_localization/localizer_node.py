"""localizer: the thin ROS 2 adapter around :class:`rlstack_localization.core.Localizer`.

Publishes:  /tf (``map -> odom``, at ``publish_rate_hz``, AMCL's contract), /amcl_pose
            (geometry_msgs/PoseWithCovarianceStamped in ``map``, transient local, one per processed
            frame), /localization/state (std_msgs/String, transient local: ``OK``, ``DEGRADED: ...``,
            ``LOST: ...``, ``INITIALISING: ...``; nav_controller pauses goals on ``LOST``),
            /diagnostics (state, inlier ratio, update time median/p95, rejected inputs).
Subscribes: the head camera's depth (32FC1 metres) and camera_info, /odom (nav_msgs/Odometry: the
            wheel odometry, base_link in odom; its history places each depth frame), /tf_static
            (base_link -> camera optical frame), /initialpose (geometry_msgs/PoseWithCovarianceStamped,
            the rviz "2D Pose Estimate" convention, frame ``map``).

Only robot signals: never /sim_ground_truth. Bad input (NaN poses, wrong frames, malformed
images) is rejected, counted in /diagnostics (``rejected.<input>.<kind>``) and logged at most once
per kind every 5 s; the node never crashes on it.
"""

from __future__ import annotations

import bisect
import math
import sys
import time
from collections import deque
from typing import Deque, Dict, List, Optional, Tuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseWithCovarianceStamped, TransformStamped
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from rlstack_common import declare_parameter, run_node
from rlstack_localization.core import Localizer, LocalizerParams, State, virtual_scan
from rlstack_nav.map_io import MapFormatError, load_map
from rlstack_nav.obstacles import quat_to_matrix, yaw_from_quat

LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
TF_STATIC = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)
SENSOR = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2, reliability=ReliabilityPolicy.RELIABLE)
WARN_PERIOD_S = 5.0

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
    "min_points": ("Fewer scan points than this: DEGRADED, odometry only", 0, 100000),
    "max_distance": ("Distance field cap, m", 0.05, 10.0),
    "huber": ("Huber threshold of the match residuals, m", 0.001, 1.0),
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


def stamp_s(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def tf_to_matrix(t) -> np.ndarray:
    m = np.eye(4)
    q = t.rotation
    m[:3, :3] = quat_to_matrix((q.x, q.y, q.z, q.w))
    m[:3, 3] = (t.translation.x, t.translation.y, t.translation.z)
    return m


class LocalizerNode(Node):
    def __init__(self) -> None:
        super().__init__("localizer")
        d = lambda *a, **k: declare_parameter(self, *a, **k)  # noqa: E731
        map_yaml = d("map_yaml", "", "map_server YAML of the occupancy map to localise against")
        self.map_frame = d("map_frame", "map", "Map frame (the parent of map -> odom)")
        self.odom_frame = d("odom_frame", "odom", "Odometry frame")
        self.base_frame = d("base_frame", "base_link", "Robot base frame")
        odom_topic = d("odom_topic", "/odom", "Wheel odometry topic (nav_msgs/Odometry)")
        depth_topic = d("depth_topic", "/head_camera/depth/image_raw", "Depth image topic (32FC1, metres)")
        info_topic = d("camera_info_topic", "/head_camera/camera_info", "CameraInfo of the depth image")
        state_topic = d("state_topic", "/localization/state", "Localisation state topic (std_msgs/String, latched)")
        self.update_rate = d("update_rate_hz", 10.0, "Depth frames processed per second of frame time (at most)",
                             min_value=0.1, max_value=100.0)
        publish_rate = d("publish_rate_hz", 20.0, "Rate of map -> odom on /tf, Hz (steady clock)",
                         min_value=1.0, max_value=200.0)
        self.tolerance = d("transform_tolerance_s", 0.1, "map -> odom is stamped this far after the latest "
                           "odometry (AMCL's transform_tolerance)", min_value=0.0, max_value=10.0)
        diag_rate = d("diagnostics_rate_hz", 1.0, "Rate of /diagnostics, Hz", min_value=0.1, max_value=50.0)
        set_initial = d("set_initial_pose", True, "Start from initial_pose_* (else wait for /initialpose)")
        ix = d("initial_pose_x", 0.0, "Initial base_link x in map, m", min_value=-1e4, max_value=1e4)
        iy = d("initial_pose_y", 0.0, "Initial base_link y in map, m", min_value=-1e4, max_value=1e4)
        iyaw = d("initial_pose_yaw", 0.0, "Initial base_link yaw in map, rad", min_value=-math.pi, max_value=math.pi)
        defaults = LocalizerParams()
        values = {}
        for name, (desc, lo, hi) in CORE_PARAMS.items():
            default = getattr(defaults, name)
            if isinstance(default, int):
                values[name] = d(name, int(default), desc, min_value=int(lo), max_value=int(hi))
            else:
                values[name] = d(name, float(default), desc, min_value=float(lo), max_value=float(hi))
        try:
            params = LocalizerParams(**values)
        except ValueError as exc:
            raise SystemExit(f"error: {exc}")
        if not map_yaml:
            raise SystemExit("error: parameter map_yaml is empty: give the map_server YAML of the map")
        try:
            grid = load_map(map_yaml, frame_id=self.map_frame)
            self.loc = Localizer(grid, params)
        except (MapFormatError, ValueError, OSError) as exc:
            raise SystemExit(f"error: cannot use map {map_yaml}: {exc}")
        self.params = params
        self.cell = grid.resolution

        self.odom_history: Deque[Tuple[float, Tuple[float, float, float]]] = deque(maxlen=600)
        self.odom_stamp = -math.inf
        self.base_z = 0.0
        self.static_tf: Dict[str, Tuple[str, np.ndarray]] = {}
        self.camera: Optional[Tuple[float, float, float, float]] = None
        self.last_frame_stamp = -math.inf
        self.pending_initial: Optional[Tuple[Tuple[float, float, float], Optional[np.ndarray], str]] = None
        if set_initial:
            self.pending_initial = ((ix, iy, iyaw), None, "parameters")
        self.rejected: Dict[str, int] = {}
        self._last_warn: Dict[str, float] = {}
        self.update_times: Deque[float] = deque(maxlen=500)
        self.updates = 0
        self.last_result = None
        self.last_state_text = ""
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)

        self.tf_pub = self.create_publisher(TFMessage, "/tf", 100)
        self.pose_pub = self.create_publisher(PoseWithCovarianceStamped, "/amcl_pose", LATCHED)
        self.state_pub = self.create_publisher(String, state_topic, LATCHED)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(Odometry, odom_topic, self.on_odom, 50)
        self.create_subscription(TFMessage, "/tf_static", self.on_tf_static, TF_STATIC)
        self.create_subscription(CameraInfo, info_topic, self.on_camera_info, SENSOR)
        self.create_subscription(Image, depth_topic, self.on_depth, SENSOR)
        self.create_subscription(PoseWithCovarianceStamped, "/initialpose", self.on_initial_pose, 10)
        self.create_timer(1.0 / publish_rate, self.publish_transform, clock=self.steady)
        self.create_timer(1.0 / diag_rate, self.publish_diagnostics, clock=self.steady)
        self.publish_state()
        self.get_logger().info(
            f"ready: map {map_yaml} ({grid.width} x {grid.height} cells at {grid.resolution:g} m); "
            f"depth {depth_topic}; publishing {self.map_frame} -> {self.odom_frame} at {publish_rate:g} Hz"
            + (f"; initial pose ({ix:g}, {iy:g}, {iyaw:g})" if set_initial else "; waiting for /initialpose"))

    # ------------------------------------------------------------------ bookkeeping
    def reject(self, what: str, kind: str, message: str) -> None:
        key = f"{what}.{kind}"
        self.rejected[key] = self.rejected.get(key, 0) + 1
        now = time.monotonic()
        if now - self._last_warn.get(key, -math.inf) >= WARN_PERIOD_S:
            self._last_warn[key] = now
            self.get_logger().warning(f"rejected {what} ({kind}): {message} ({self.rejected[key]} so far)")

    def odom_at(self, stamp: float) -> Optional[Tuple[float, float, float]]:
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

    def chain(self, frame: str) -> Optional[np.ndarray]:
        """Pose of ``frame`` in base_frame from /tf_static (None while not connected)."""
        m = np.eye(4)
        for _ in range(20):
            if frame == self.base_frame:
                return m
            link = self.static_tf.get(frame)
            if link is None:
                return None
            parent, t = link
            m = t @ m
            frame = parent
        return None

    # ------------------------------------------------------------------ inputs
    def on_odom(self, msg: Odometry) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        vals = (p.x, p.y, p.z, q.x, q.y, q.z, q.w)
        if not all(math.isfinite(v) for v in vals) or (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w) < 1e-12:
            self.reject("odom", "non_finite", "pose is not finite or has a zero quaternion")
            return
        stamp = stamp_s(msg.header.stamp)
        if self.odom_history and stamp < self.odom_history[-1][0]:
            self.odom_history.clear()    # time went back (a sim reset): start over
        pose = (p.x, p.y, yaw_from_quat((q.x, q.y, q.z, q.w)))
        self.odom_history.append((stamp, pose))
        self.odom_stamp = stamp
        self.base_z = p.z
        if self.pending_initial is not None:
            map_pose, cov, source = self.pending_initial
            self.pending_initial = None
            self.apply_initial_pose(map_pose, cov, source)

    def on_tf_static(self, msg: TFMessage) -> None:
        for t in msg.transforms:
            self.static_tf[t.child_frame_id] = (t.header.frame_id, tf_to_matrix(t.transform))

    def on_camera_info(self, msg: CameraInfo) -> None:
        k = msg.k
        if not all(math.isfinite(v) for v in k) or k[0] <= 0 or k[4] <= 0:
            self.reject("camera_info", "bad_intrinsics", "non-finite or non-positive focal length")
            return
        self.camera = (k[0], k[4], k[2], k[5])

    def on_initial_pose(self, msg: PoseWithCovarianceStamped) -> None:
        frame = msg.header.frame_id.lstrip("/")
        if frame != self.map_frame:
            self.reject("initialpose", "wrong_frame",
                        f"frame '{msg.header.frame_id}' (the initial pose must be in '{self.map_frame}')")
            return
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        vals = (p.x, p.y, p.z, q.x, q.y, q.z, q.w)
        if not all(math.isfinite(v) for v in vals):
            self.reject("initialpose", "non_finite", f"pose has NaN/inf: {vals}")
            return
        if q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w < 1e-12:
            self.reject("initialpose", "zero_quaternion", "orientation is a zero quaternion")
            return
        cov6 = np.asarray(msg.pose.covariance, float).reshape(6, 6)
        cov = None
        if np.all(np.isfinite(cov6)) and np.any(cov6 != 0):
            idx = [0, 1, 5]
            cov = cov6[np.ix_(idx, idx)]
        map_pose = (p.x, p.y, yaw_from_quat((q.x, q.y, q.z, q.w)))
        if not self.odom_history:
            self.pending_initial = (map_pose, cov, "/initialpose")
            self.get_logger().info("initial pose received before any odometry: applied at the first /odom")
            return
        self.apply_initial_pose(map_pose, cov, "/initialpose")

    def apply_initial_pose(self, map_pose, cov, source: str) -> None:
        odom_pose = self.odom_history[-1][1]
        self.loc.set_initial_pose(map_pose, odom_pose, cov)
        self.get_logger().info(f"initial pose ({map_pose[0]:.3f}, {map_pose[1]:.3f}, {map_pose[2]:.3f}) "
                               f"from {source}")
        self.publish_state()
        self.publish_transform()

    def on_depth(self, msg: Image) -> None:
        stamp = stamp_s(msg.header.stamp)
        if stamp < self.last_frame_stamp:      # time went back (a reset)
            self.last_frame_stamp = -math.inf
        if stamp - self.last_frame_stamp < 1.0 / self.update_rate:
            return
        if self.camera is None or not self.odom_history:
            return
        if msg.encoding != "32FC1":
            self.reject("depth", "encoding", f"encoding {msg.encoding} (need 32FC1)")
            return
        if msg.step < msg.width * 4 or len(msg.data) < msg.step * msg.height or msg.height == 0:
            self.reject("depth", "size", "image data shorter than width x height")
            return
        base_cam = self.chain(msg.header.frame_id)
        if base_cam is None:
            self.reject("depth", "no_transform", f"no static transform {self.base_frame} -> {msg.header.frame_id}")
            return
        self.last_frame_stamp = stamp
        t0 = time.perf_counter()
        dtype = np.dtype(">f4") if msg.is_bigendian else np.dtype("<f4")
        rows = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.step)
        depth = rows[:, :msg.width * 4].copy().view(dtype).reshape(msg.height, msg.width)
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
                self.get_logger().warning(text)
            else:
                self.get_logger().info(text)
        self.publish_state()
        if result.pose is not None:
            self.publish_pose(result, msg.header.stamp)

    # ------------------------------------------------------------------ outputs
    def state_text(self) -> str:
        s = self.loc.state
        return s.value if s == State.OK else f"{s.value}: {self.loc.reason}"

    def publish_state(self) -> None:
        text = self.state_text()
        if text != self.last_state_text:
            self.last_state_text = text
            self.state_pub.publish(String(data=text))

    def publish_transform(self) -> None:
        m2o = self.loc.map_to_odom
        if m2o is None or not self.odom_history:
            return
        t = TransformStamped()
        t.header.frame_id, t.child_frame_id = self.map_frame, self.odom_frame
        stamp = self.odom_stamp + self.tolerance
        t.header.stamp.sec = int(math.floor(stamp))
        t.header.stamp.nanosec = int((stamp - math.floor(stamp)) * 1e9) % 1_000_000_000
        t.transform.translation.x, t.transform.translation.y = m2o[0], m2o[1]
        t.transform.rotation.z, t.transform.rotation.w = math.sin(m2o[2] / 2), math.cos(m2o[2] / 2)
        self.tf_pub.publish(TFMessage(transforms=[t]))

    def publish_pose(self, result, stamp) -> None:
        msg = PoseWithCovarianceStamped()
        msg.header.frame_id, msg.header.stamp = self.map_frame, stamp
        x, y, yaw = result.pose
        msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
        msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        cov = np.zeros((6, 6))
        idx = [0, 1, 5]
        cov[np.ix_(idx, idx)] = result.covariance
        for a in (2, 3, 4):
            cov[a, a] = 1e-9
        msg.pose.covariance = [float(v) for v in cov.ravel()]
        self.pose_pub.publish(msg)

    def publish_diagnostics(self) -> None:
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
        level = {State.OK: DiagnosticStatus.OK, State.DEGRADED: DiagnosticStatus.WARN,
                 State.INITIALISING: DiagnosticStatus.WARN, State.LOST: DiagnosticStatus.ERROR}[state]
        status = DiagnosticStatus(level=level, name="localizer: localisation", message=self.state_text(),
                                  hardware_id="localizer",
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(msg)


def main(args: Optional[List[str]] = None) -> int:
    return run_node(LocalizerNode, args)


if __name__ == "__main__":
    sys.exit(main())
