"""robot_state_publisher: /robot_description and every link's transform from /joint_states.

Publishes: /robot_description (std_msgs/String, reliable, transient local, depth 1: latched, as
upstream robot_state_publisher), /tf_static (each fixed joint, transient local, once at start) and
/tf (each moving joint from /joint_states, stamped with the /joint_states stamp).
/diagnostics (diagnostic_msgs/DiagnosticArray, status "robot_state_publisher: ...": messages
received and published, ``rejected.<kind>`` counts).
Subscribes: /joint_states (sensor_msgs/JointState).

The kinematics are in :mod:`rlstack_description.kinematics` (no rclpy). A URDF that cannot be used
stops the node at start with one error line naming the file (or parameter) and the problem, exit 2.
Joint names in /joint_states that the URDF does not have, positions that are not finite and
messages whose name and position arrays differ in length are skipped and counted (/diagnostics),
with one warning per kind.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Dict, List, Optional

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TransformStamped
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from rlstack_common.node_main import run_node
from rlstack_common.param_table import declare_all
from rlstack_common.qos import TF_STATIC
from rlstack_description.kinematics import RobotModel, UrdfError, load_urdf, parse_urdf
from rlstack_description.parameters import ROBOT_STATE_PUBLISHER

#: the URDF in the share folder, used when neither robot_description nor urdf_file is set
DEFAULT_URDF = "urdf/mobile_manipulator.urdf"
#: upstream robot_state_publisher's /robot_description QoS: reliable, transient local, keep last 1
DESCRIPTION_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)


def default_urdf_file() -> str:
    """The URDF installed in rlstack_description's share folder."""
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        return os.path.join(get_package_share_directory("rlstack_description"), DEFAULT_URDF)
    except PackageNotFoundError:
        raise UrdfError("rlstack_description is not installed (source env.sh); set urdf_file or "
                        "robot_description") from None


def _transform_msg(parent: str, child: str, transform, stamp) -> TransformStamped:
    t = TransformStamped()
    t.header.stamp = stamp
    t.header.frame_id = parent
    t.child_frame_id = child
    (t.transform.translation.x, t.transform.translation.y, t.transform.translation.z) = transform[0]
    (t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z, t.transform.rotation.w) = transform[1]
    return t


class RobotStatePublisher(Node):
    def __init__(self) -> None:
        super().__init__("robot_state_publisher")
        v = declare_all(self, ROBOT_STATE_PUBLISHER)
        text: str = v["robot_description"]
        if text.strip():
            self.model: RobotModel = parse_urdf(text, "parameter robot_description")
        else:
            path = v["urdf_file"] or default_urdf_file()
            self.model = load_urdf(path)
            with open(path, "r", encoding="utf-8") as f:
                text = f.read()
        self.prefix: str = v["frame_prefix"]
        self.min_interval_ns = int(1e9 / v["publish_frequency"])
        self.publish_tf: bool = v["publish_tf"]
        self._last_ns: Dict[str, int] = {}
        self.rejected: Dict[str, int] = {}
        self.received = 0
        self.published = 0

        self.description_pub = self.create_publisher(String, "/robot_description", DESCRIPTION_QOS)
        self.description_pub.publish(String(data=text))
        if self.publish_tf:
            self.tf_pub = self.create_publisher(TFMessage, "/tf", 100)
            self.tf_static_pub = self.create_publisher(TFMessage, "/tf_static", TF_STATIC)
            self._publish_static()
            self.create_subscription(JointState, "/joint_states", self.on_joint_states, 10)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        # steady clock: diagnostics go out before the first /clock message too
        self.create_timer(1.0 / v["diagnostics_rate_hz"], self.publish_diagnostics,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"robot '{self.model.name}': {len(self.model.links)} links, {len(self.model.fixed_joints)} fixed and "
            f"{len(self.model.moving_joints)} moving joints (from {self.model.source}); "
            + ("publishing /tf and /tf_static" if self.publish_tf else "publish_tf is false: /robot_description only"))

    def _frame(self, name: str) -> str:
        return self.prefix + name

    def _publish_static(self) -> None:
        stamp = self.get_clock().now().to_msg()
        transforms = [_transform_msg(self._frame(j.parent), self._frame(j.child), self.model.joint_transform(j),
                                     stamp) for j in self.model.fixed_joints]
        self.tf_static_pub.publish(TFMessage(transforms=transforms))

    def _reject(self, kind: str, detail: str) -> None:
        self.rejected[kind] = self.rejected.get(kind, 0) + 1
        if self.rejected[kind] == 1:
            self.get_logger().warning(f"/joint_states: {detail} (skipped; warned once for this kind)")

    def publish_diagnostics(self) -> None:
        st = DiagnosticStatus(name=f"{self.get_name()}: robot state publisher", hardware_id=self.model.name)
        st.level, st.message = DiagnosticStatus.OK, "ok"
        if self.rejected:
            st.level, st.message = DiagnosticStatus.WARN, "rejected /joint_states input"
        values = {"links": len(self.model.links), "publish_tf": str(self.publish_tf).lower(),
                  "joint_states_received": self.received, "tf_published": self.published,
                  **{f"rejected.{k}": n for k, n in sorted(self.rejected.items())}}
        st.values = [KeyValue(key=k, value=str(n)) for k, n in values.items()]
        arr = DiagnosticArray(status=[st])
        arr.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(arr)

    def on_joint_states(self, msg: JointState) -> None:
        self.received += 1
        if len(msg.position) != len(msg.name):
            self._reject("length", f"{len(msg.name)} names but {len(msg.position)} positions")
            return
        stamp = msg.header.stamp
        stamp_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        if stamp_ns == 0:   # an unstamped message: now
            stamp = self.get_clock().now().to_msg()
            stamp_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        positions: Dict[str, float] = {}
        for name, value in zip(msg.name, msg.position):
            joint = self.model.joints.get(name)
            if joint is None or not joint.moving:
                shown = name if len(name) <= 60 else name[:60] + "..."
                self._reject("unknown_joint", f"joint {shown!r} is no moving joint of the URDF")
            elif not math.isfinite(value):
                self._reject("non_finite", f"joint '{name}' position {value} is not finite")
            else:
                positions[name] = value
        values = self.model.resolve_positions(positions)
        transforms: List[TransformStamped] = []
        for name, value in values.items():
            last: Optional[int] = self._last_ns.get(name)
            # a stamp earlier than the last one (the sim was reset, a bag looped) publishes at once
            if last is not None and 0 <= stamp_ns - last < self.min_interval_ns:
                continue
            self._last_ns[name] = stamp_ns
            j = self.model.joints[name]
            transforms.append(_transform_msg(self._frame(j.parent), self._frame(j.child),
                                             self.model.joint_transform(j, value), stamp))
        if transforms:
            self.tf_pub.publish(TFMessage(transforms=transforms))
            self.published += 1


def main(args: Optional[List[str]] = None) -> int:
    # a UrdfError is a ValueError: run_node prints its one line and exits 2
    return run_node(RobotStatePublisher, args, small_messages=True)


if __name__ == "__main__":
    sys.exit(main())
