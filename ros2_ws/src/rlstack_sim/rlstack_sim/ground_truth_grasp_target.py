"""``ground_truth_grasp_target``: the simulator's true grasp target, for the labelled ablation.

Simulator side, never on a robot (``rlstack_sim`` is not in a robot install): in robot mode the
mission asks perception for the grasp pose; the ablation (``launch/fetch.launch.yaml
robot_mode:=false``, ``--ground-truth-grasp`` in ``tools/demo.py`` and ``rlstack_mission.evaluate``)
asks the simulator instead. The mission stays a robot-side node either way: it runs with
``grasp_target_source: topic``, says which object it means on /fetch/grasp_request (the perceived
position it matched, in ``map``), and reads /grasp_target; this node alone reads the simulator's truth.

Subscribes  /sim_ground_truth/markers (visualization_msgs/MarkerArray: every object, marker ``ns``
            = its name), /sim_ground_truth/odom (nav_msgs/Odometry: the base's true pose, same
            frame), /fetch/grasp_request (geometry_msgs/PointStamped, ``map``, latched: the object
            the mission means; an empty ``frame_id`` ends the request)
Publishes   /grasp_target (geometry_msgs/PoseStamped in ``base_link``: the requested object's true
            pose relative to the true base, at ``rate_hz`` while a request stands)

The requested object is the ground-truth object nearest the requested point, within
``target_match_radius``; none within it (a false detection) publishes nothing, and the mission's
grasp ends for want of a target. The ground truth's frame is the simulator's world (``map`` when the
bridge drifts odometry), so the position is compared with the request as given.
"""

from __future__ import annotations

import math
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np
from geometry_msgs.msg import PointStamped, PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from visualization_msgs.msg import MarkerArray

from rlstack_common import run_node
from rlstack_common.param_table import declare_all
from rlstack_common.qos import LATCHED
from sim_bridges.contract import Pose as SimPose

from .convert import _fill_pose, relative_pose
from .grasp_target_parameters import GROUND_TRUTH_GRASP_TARGET

Pose = Tuple[np.ndarray, np.ndarray]   # position (3,), quaternion (x, y, z, w)


def nearest_object(objects: Mapping[str, Pose], point: Sequence[float], radius: float) -> Optional[str]:
    """Name of the object whose position is nearest ``point``, if within ``radius`` (m); else None."""
    best, best_d = None, math.inf
    for name, (pos, _quat) in objects.items():
        dist = float(np.linalg.norm(np.asarray(pos, float) - np.asarray(point, float)))
        if dist < best_d:
            best, best_d = name, dist
    return best if best_d <= radius else None


def in_base_frame(base: Pose, obj: Pose) -> Pose:
    """``obj`` (pose in the world) expressed in the frame of ``base`` (the base's pose in the same world)."""
    b_quat = np.asarray(base[1], float)
    norm = float(np.linalg.norm(b_quat))
    if not math.isfinite(norm) or norm < 1e-9:
        raise ValueError(f"base orientation is not a rotation: {b_quat.tolist()}")
    return relative_pose(SimPose(np.asarray(base[0], float), b_quat / norm),
                         SimPose(np.asarray(obj[0], float), np.asarray(obj[1], float)))


class GroundTruthGraspTarget(Node):
    def __init__(self) -> None:
        super().__init__("ground_truth_grasp_target")
        v = declare_all(self, GROUND_TRUTH_GRASP_TARGET)
        self.radius, rate_hz, self.base_frame = v.target_match_radius, v.rate_hz, v.base_frame
        self.objects: Dict[str, Pose] = {}
        self.base: Optional[Pose] = None
        self.request: Optional[np.ndarray] = None
        self.target: Optional[str] = None
        self.create_subscription(MarkerArray, "/sim_ground_truth/markers", self._on_markers, 10)
        self.create_subscription(Odometry, "/sim_ground_truth/odom", self._on_base, 10)
        self.create_subscription(PointStamped, "/fetch/grasp_request", self._on_request, LATCHED)
        self.pub = self.create_publisher(PoseStamped, "/grasp_target", 10)
        self.create_timer(1.0 / rate_hz, self._publish)
        self.get_logger().info(f"simulator-only grasp target (labelled ablation): objects within "
                               f"{self.radius:g} m of /fetch/grasp_request -> /grasp_target")

    def _on_markers(self, msg: MarkerArray) -> None:
        self.objects = {m.ns: (np.array([m.pose.position.x, m.pose.position.y, m.pose.position.z]),
                               np.array([m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z,
                                         m.pose.orientation.w])) for m in msg.markers}
        if self.request is not None and self.target is None:
            self._match()

    def _on_base(self, msg: Odometry) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        self.base = (np.array([p.x, p.y, p.z]), np.array([q.x, q.y, q.z, q.w]))

    def _on_request(self, msg: PointStamped) -> None:
        point = np.array([msg.point.x, msg.point.y, msg.point.z])
        if not msg.header.frame_id:
            self.request = self.target = None
            return
        if not np.all(np.isfinite(point)):
            self.get_logger().warning(f"grasp request ignored: not a finite point {point.tolist()}")
            self.request = self.target = None
            return
        self.request, self.target = point, None
        self._match()

    def _match(self) -> None:
        if not self.objects:
            return   # matched when the ground truth arrives
        self.target = nearest_object(self.objects, self.request, self.radius)
        if self.target is None:
            # matched again with each ground-truth message (20 Hz) until it ends: said every 5 s, not each time
            self.get_logger().warning(f"no object within {self.radius:g} m of the requested "
                                      f"{np.round(self.request, 3).tolist()}: no grasp target",
                                      throttle_duration_sec=5.0)
        else:
            self.get_logger().info(f"grasp target: '{self.target}' (ground truth)")

    def _publish(self) -> None:
        if self.target is None or self.base is None or self.target not in self.objects:
            return
        try:
            pos, quat = in_base_frame(self.base, self.objects[self.target])
        except ValueError as exc:
            self.get_logger().warning(f"grasp target: {exc}", throttle_duration_sec=5.0)
            return
        msg = PoseStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self.base_frame
        _fill_pose(msg.pose, pos, quat)
        self.pub.publish(msg)


def main(args=None) -> int:
    return run_node(GroundTruthGraspTarget, args, small_messages=True)


if __name__ == "__main__":
    raise SystemExit(main())
