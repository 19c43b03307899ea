"""twist_stamper: /cmd_vel (geometry_msgs/Twist) -> TwistStamped for ros2_control's diff_drive_controller.

nav_controller and the mission publish geometry_msgs/Twist on /cmd_vel; diff_drive_controller
takes geometry_msgs/TwistStamped on ``~/cmd_vel`` since Jazzy. Each finite command is stamped
with the node clock and ``frame_id`` and forwarded at once; a non-finite one is dropped
(counted, logged once per 5 s). The controller's own ``cmd_vel_timeout`` stops the base when
commands stop, so no watchdog is repeated here. Logic: ``rlstack_adapters.core.TwistStamperCore``.
"""

from __future__ import annotations

import sys

from geometry_msgs.msg import Twist, TwistStamped
from rclpy.node import Node

from rlstack_adapters.core import TwistStamperCore
from rlstack_adapters.parameters import TWIST_STAMPER
from rlstack_common import run_node
from rlstack_common.param_table import declare_all


class TwistStamper(Node):
    def __init__(self) -> None:
        super().__init__("twist_stamper")
        v = declare_all(self, TWIST_STAMPER)
        in_topic, out_topic, self.frame_id = v.input_topic, v.output_topic, v.frame_id
        self.core = TwistStamperCore()
        self.pub = self.create_publisher(TwistStamped, out_topic, 10)
        self.create_subscription(Twist, in_topic, self.on_twist, 10)
        self.get_logger().info(f"{in_topic} (Twist) -> {out_topic} (TwistStamped in {self.frame_id})")

    def on_twist(self, msg: Twist) -> None:
        lin = (msg.linear.x, msg.linear.y, msg.linear.z)
        ang = (msg.angular.x, msg.angular.y, msg.angular.z)
        if not self.core.accept(lin, ang):
            self.get_logger().warning("dropped a non-finite /cmd_vel", throttle_duration_sec=5.0)
            return
        out = TwistStamped(twist=msg)
        out.header.stamp = self.get_clock().now().to_msg()
        out.header.frame_id = self.frame_id
        self.pub.publish(out)


def main(args=None) -> int:
    return run_node(TwistStamper, args, small_messages=True)


if __name__ == "__main__":
    sys.exit(main())
