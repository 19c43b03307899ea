"""localizer: the thin ROS 2 adapter around :class:`rlstack_localization.core.Localizer`.

Parameters, topics, timers and message conversion only: the odometry history, static transforms,
initial pose, depth frames, state text and diagnostics values live in
:class:`rlstack_localization.node_core.LocalizerNodeCore` (no rclpy).

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

import math
import sys
from typing import List, Optional

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

from rlstack_common import run_node
from rlstack_common.param_table import declare_all
from rlstack_common.qos import TF_STATIC, sensor_subscription
from rlstack_localization import last_pose
from rlstack_localization.core import Localizer, LocalizerParams, State
from rlstack_localization.node_core import CORE_PARAMS, LocalizerNodeCore, LocalizerOutputs
from rlstack_localization.parameters import LOCALIZER
from rlstack_nav.map_io import MapFormatError, load_map
from rlstack_nav.transforms import stamp_s, tf_to_matrix

LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
LEVELS = {State.OK: DiagnosticStatus.OK, State.DEGRADED: DiagnosticStatus.WARN,
          State.INITIALISING: DiagnosticStatus.WARN, State.LOST: DiagnosticStatus.ERROR}


def _quat(q):
    return (q.x, q.y, q.z, q.w)


class LocalizerNode(Node, LocalizerOutputs):
    def __init__(self) -> None:
        super().__init__("localizer")
        v = declare_all(self, LOCALIZER)
        map_yaml, odom_topic, state_topic = v.map_yaml, v.odom_topic, v.state_topic
        depth_topic, info_topic = v.depth_topic, v.camera_info_topic
        self.map_frame, self.odom_frame, self.base_frame = v.map_frame, v.odom_frame, v.base_frame
        self.update_rate, self.tolerance = v.update_rate_hz, v.transform_tolerance_s
        publish_rate, diag_rate, set_initial = v.publish_rate_hz, v.diagnostics_rate_hz, v.set_initial_pose
        ix, iy, iyaw = v.initial_pose_x, v.initial_pose_y, v.initial_pose_yaw
        self.last_pose_file, max_age, save_period = v.last_pose_file, v.last_pose_max_age_s, v.last_pose_period_s
        values = {name: v[name] for name in CORE_PARAMS}
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
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)
        log = self.get_logger()
        self.core = LocalizerNodeCore(self.loc, params, grid.resolution, self.map_frame, self.base_frame,
                                      self.update_rate, (ix, iy, iyaw) if set_initial else None, self, log.info,
                                      log.warning)

        resumed = ""
        if self.last_pose_file:
            saved, why = last_pose.load(self.last_pose_file, max_age)
            if saved is not None:
                self.core.resume(saved[0], saved[1], f"last pose file {self.last_pose_file}")
                resumed = f"; resuming from {self.last_pose_file} (map -> odom {tuple(round(v, 3) for v in saved[0])})"
            elif why:
                log.warning(f"last pose file {self.last_pose_file} not used: {why}")
            self.create_timer(save_period, self.save_last_pose, clock=self.steady)

        self.tf_pub = self.create_publisher(TFMessage, "/tf", 100)
        self.pose_pub = self.create_publisher(PoseWithCovarianceStamped, "/amcl_pose", LATCHED)
        self.state_pub = self.create_publisher(String, state_topic, LATCHED)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(Odometry, odom_topic, self.on_odom, 50)
        self.create_subscription(TFMessage, "/tf_static", self.on_tf_static, TF_STATIC)
        sensor_subscription(self, CameraInfo, info_topic, lambda m: self.core.set_camera(m.k))
        sensor_subscription(self, Image, depth_topic, self.on_depth)
        self.create_subscription(PoseWithCovarianceStamped, "/initialpose", self.on_initial_pose, 10)
        self.create_timer(1.0 / publish_rate, self.transform, clock=self.steady)
        self.create_timer(1.0 / diag_rate, self.publish_diagnostics, clock=self.steady)
        self.core.publish_state()
        self.get_logger().info(
            f"ready: map {map_yaml} ({grid.width} x {grid.height} cells at {grid.resolution:g} m); "
            f"depth {depth_topic}; publishing {self.map_frame} -> {self.odom_frame} at {publish_rate:g} Hz"
            + (f"; initial pose ({ix:g}, {iy:g}, {iyaw:g})" if set_initial else "; waiting for /initialpose")
            + resumed)

    # ------------------------------------------------------------------ inputs
    def on_odom(self, msg: Odometry) -> None:
        p = msg.pose.pose.position
        self.core.odometry(p.x, p.y, p.z, _quat(msg.pose.pose.orientation), stamp_s(msg.header.stamp))

    def on_tf_static(self, msg: TFMessage) -> None:
        for t in msg.transforms:
            try:
                matrix = tf_to_matrix(t.transform)
            except ValueError as exc:   # NaN, a zero quaternion: counted, never stored (found by fuzzing)
                self.core.reject("tf_static", "invalid", f"{t.header.frame_id} -> {t.child_frame_id}: {exc}")
                continue
            self.core.static_transform(t.header.frame_id, t.child_frame_id, matrix)

    def on_initial_pose(self, msg: PoseWithCovarianceStamped) -> None:
        p = msg.pose.pose.position
        self.core.initial_pose(msg.header.frame_id, p.x, p.y, p.z, _quat(msg.pose.pose.orientation),
                               msg.pose.covariance)

    def on_depth(self, msg: Image) -> None:
        self.core.depth(stamp_s(msg.header.stamp), msg.header.stamp, msg.header.frame_id, msg.encoding, msg.width,
                        msg.height, msg.step, msg.is_bigendian, msg.data)

    # ------------------------------------------------------------------ outputs (LocalizerOutputs)
    def state(self, text: str) -> None:
        self.state_pub.publish(String(data=text))

    def transform(self) -> None:
        """map -> odom, stamped transform_tolerance_s after the latest odometry (AMCL's contract)."""
        m2o = self.loc.map_to_odom
        if m2o is None or not self.core.odom_history:
            return
        t = TransformStamped()
        t.header.frame_id, t.child_frame_id = self.map_frame, self.odom_frame
        stamp = self.core.odom_stamp + self.tolerance
        t.header.stamp.sec = int(math.floor(stamp))
        t.header.stamp.nanosec = int((stamp - math.floor(stamp)) * 1e9) % 1_000_000_000
        t.transform.translation.x, t.transform.translation.y = m2o[0], m2o[1]
        t.transform.rotation.z, t.transform.rotation.w = math.sin(m2o[2] / 2), math.cos(m2o[2] / 2)
        self.tf_pub.publish(TFMessage(transforms=[t]))

    def pose(self, result, stamp) -> None:
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

    def save_last_pose(self) -> None:
        m2o = self.loc.map_to_odom
        if m2o is None or self.loc.state not in (State.OK, State.DEGRADED) or not self.core.odom_history:
            return
        try:
            last_pose.save(self.last_pose_file, m2o, self.core.odom_stamp)
        except OSError as exc:
            self.get_logger().warning(f"cannot write {self.last_pose_file}: {exc}", throttle_duration_sec=60.0)

    def destroy_node(self) -> None:
        if self.last_pose_file:
            last_pose.remove(self.last_pose_file)   # a clean stop: nothing to resume from
        super().destroy_node()

    def publish_diagnostics(self) -> None:
        state, message, values = self.core.diagnostics()
        status = DiagnosticStatus(level=LEVELS[state], name="localizer: localisation", message=message,
                                  hardware_id="localizer",
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(msg)


def main(args: Optional[List[str]] = None) -> int:
    return run_node(LocalizerNode, args)


if __name__ == "__main__":
    sys.exit(main())
