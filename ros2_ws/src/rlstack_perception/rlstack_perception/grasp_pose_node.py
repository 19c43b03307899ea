"""``grasp_pose``: the grasp pose of one object from the head camera, on request (robot mode).

A thin adapter around :mod:`rlstack_perception.grasp_pose`: it keeps the last few depth frames,
the camera info and /tf, and answers ``~/estimate`` (``rlstack_interfaces/srv/EstimateGraspPose``):
given a hint (the semantic map's position of the object, in any frame /tf knows), it estimates
the object's centre, yaw (mod 90 deg), size and support height from the newest ``views`` frames,
fuses them and says whether they agreed. The fetch mission calls it after docking, before the
lift controller runs (docs/reference/mission.md, "Robot mode").

Subscribes  <depth_topic> (sensor_msgs/Image 32FC1 m or 16UC1 mm), <camera_info_topic>, /tf, /tf_static
Serves      ~/estimate (rlstack_interfaces/srv/EstimateGraspPose)
Publishes   /diagnostics (requests, answers by reason, frames kept)

It reads no simulator truth. Bad frames are skipped and counted; a request that cannot be
answered gets ``ok: false`` and a reason (``NO_FRAME``, ``BAD_INPUT``, ``TARGET_NOT_VISIBLE``, ...).
"""

from __future__ import annotations

import math
import sys
from collections import Counter, deque
from typing import List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from tf2_msgs.msg import TFMessage

from rlstack_common import run_node
from rlstack_common.param_table import declare_all
from rlstack_common.qos import TF_STATIC, sensor_subscription
from rlstack_interfaces.srv import EstimateGraspPose
from rlstack_perception.frame import Frame, FrameError
from rlstack_perception.grasp_pose import BAD_INPUT, GraspPoseConfig, estimate_grasp_pose, fuse_estimates, in_frame
from rlstack_perception.node import image_array, secs, to_time
from rlstack_perception.parameters import GRASP_CONFIG_FIELDS, GRASP_POSE
from rlstack_perception.tf_buffer import TfBuffer

NO_FRAME = "NO_FRAME"


class GraspPoseNode(Node):
    def __init__(self) -> None:
        super().__init__("grasp_pose")
        v = declare_all(self, GRASP_POSE)
        depth_topic, info_topic, self.output_frame = v.depth_topic, v.camera_info_topic, v.output_frame
        self.keep, self.max_age, self.max_spread = v.frames_kept, v.max_frame_age_s, v.max_view_spread_m
        self.max_spread_yaw = math.radians(v.max_view_spread_deg)
        self.config = GraspPoseConfig(**{name: v[name] for name in GRASP_CONFIG_FIELDS})

        self.tf = TfBuffer(v.tf_cache_s, v.tf_max_extrapolation_s)
        self.info: Optional[CameraInfo] = None
        self.frames: deque = deque(maxlen=self.keep)
        self.counts: Counter = Counter()
        sensor_subscription(self, Image, depth_topic, self._on_depth)
        sensor_subscription(self, CameraInfo, info_topic, self._on_info)
        self.create_subscription(TFMessage, "/tf", lambda m: self._on_tf(m, False), 100)
        self.create_subscription(TFMessage, "/tf_static", lambda m: self._on_tf(m, True), TF_STATIC)
        self.create_service(EstimateGraspPose, "~/estimate", self._estimate)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_timer(1.0, self._diagnostics)
        self.get_logger().info(f"ready: ~/estimate on {depth_topic}, answers in '{self.output_frame}'")

    def _on_depth(self, msg: Image) -> None:
        self.frames.append(msg)   # decoded only when a request comes

    def _on_info(self, msg: CameraInfo) -> None:
        self.info = msg

    def _on_tf(self, msg: TFMessage, static: bool) -> None:
        for t in msg.transforms:
            tr, q = t.transform.translation, t.transform.rotation
            try:
                self.tf.set_transform(t.header.frame_id, t.child_frame_id, (tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w),
                                      secs(t.header.stamp), static)
            except ValueError:
                self.counts["bad_tf"] += 1

    # ------------------------------------------------------------------ the service
    def _frame(self, msg: Image) -> Frame:
        info = self.info
        if info is None:
            raise FrameError("missing_camera_info", "no CameraInfo yet")
        depth = image_array(msg, "depth")
        if (info.height, info.width) != depth.shape:
            raise FrameError("size_mismatch", f"depth {depth.shape[1]}x{depth.shape[0]}, camera_info "
                                              f"{info.width}x{info.height}")
        rgb = np.zeros((*depth.shape, 3), np.uint8)   # the estimate uses depth only
        try:
            rotation, translation = self.tf.lookup(self.output_frame, msg.header.frame_id, secs(msg.header.stamp))
        except LookupError as exc:
            raise FrameError("unknown_frame", str(exc)) from None
        return Frame(rgb, depth, info.k[0], info.k[4], info.k[2], info.k[5], rotation, translation,
                     secs(msg.header.stamp))

    def _estimate(self, request, response):
        self.counts["requests"] += 1
        out_frame = (request.frame_id or self.output_frame).lstrip("/")
        if out_frame != self.output_frame and not self.tf.can_transform(out_frame, self.output_frame):
            return self._answer(response, f"{BAD_INPUT}: no transform from '{self.output_frame}' to the asked "
                                          f"frame '{out_frame}'")
        h = request.hint
        hint = np.array([h.point.x, h.point.y, h.point.z], dtype=np.float64)
        if not np.all(np.isfinite(hint)):
            return self._answer(response, f"{BAD_INPUT}: the hint is not finite")
        try:
            r, t = self.tf.lookup(self.output_frame, h.header.frame_id or self.output_frame)
        except LookupError as exc:
            return self._answer(response, f"{BAD_INPUT}: hint frame: {exc}")
        hint = r @ hint + t
        views = max(1, min(int(request.views or 1), self.keep))
        newest = sorted(self.frames, key=lambda m: secs(m.header.stamp))[-views:]
        if not newest:
            return self._answer(response, f"{NO_FRAME}: no depth frame received yet")
        estimates, skipped = [], []
        latest = secs(newest[-1].header.stamp)
        for msg in newest:
            if latest - secs(msg.header.stamp) > self.max_age:
                continue
            try:
                est = estimate_grasp_pose(self._frame(msg), hint, self.config)
                if out_frame != self.output_frame:
                    # each view at its own instant: the base may have moved between views
                    try:
                        r, t = self.tf.lookup(out_frame, self.output_frame, secs(msg.header.stamp))
                    except LookupError as exc:
                        raise FrameError("unknown_frame", str(exc)) from None
                    est = in_frame(est, r, t)
                estimates.append(est)
            except FrameError as exc:
                self.counts[f"skipped_{exc.kind}"] += 1
                skipped.append(str(exc))
        if not estimates:
            return self._answer(response, f"{NO_FRAME}: no usable frame ({'; '.join(skipped) or 'too old'})")
        fused = fuse_estimates(estimates, self.max_spread, self.max_spread_yaw)
        est = fused.pose
        if est.ok and not fused.consistent:
            return self._answer(response, est.reason)
        if not est.ok:
            return self._answer(response, est.reason)
        response.ok, response.reason = True, ""
        response.pose.header.frame_id = out_frame
        response.pose.header.stamp = to_time(latest)
        (response.pose.pose.position.x, response.pose.pose.position.y,
         response.pose.pose.position.z) = (float(v) for v in est.centre)
        (response.pose.pose.orientation.x, response.pose.pose.orientation.y, response.pose.pose.orientation.z,
         response.pose.pose.orientation.w) = est.quaternion()
        response.size.x, response.size.y, response.size.z = (float(v) for v in est.size)
        response.support_height = float(est.support_height)
        response.symmetric = bool(est.symmetric)
        response.quality = float(est.quality)
        response.n_points = int(est.n_points)
        self.counts["answered_ok"] += 1
        return response

    def _answer(self, response, reason: str):
        response.ok, response.reason = False, reason
        self.counts[f"answered_{reason.split(':')[0].lower()}"] += 1
        self.get_logger().warning(f"grasp pose: {reason}", throttle_duration_sec=2.0)
        return response

    def _diagnostics(self) -> None:
        st = DiagnosticStatus(name="grasp_pose", hardware_id="rlstack", level=DiagnosticStatus.OK,
                              message=f"{len(self.frames)} frame(s) kept")
        st.values = [KeyValue(key=k, value=str(v)) for k, v in sorted(self.counts.items())]
        arr = DiagnosticArray(status=[st])
        arr.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(arr)


def main(args: Optional[List[str]] = None) -> int:
    return run_node(GraspPoseNode, args)


if __name__ == "__main__":
    sys.exit(main())
