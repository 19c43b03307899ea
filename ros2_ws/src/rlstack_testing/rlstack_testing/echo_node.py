"""A tiny node the harness's own tests start as a real process.

Republishes std_msgs/String from ``in`` to ``out`` with a prefix, and answers the
std_srvs/Trigger service ``~/ping`` with its message count. ``ignore_sigint:=true`` makes it
ignore SIGINT, to prove the harness escalates to SIGTERM/SIGKILL.
"""

import signal
import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from std_msgs.msg import String
from std_srvs.srv import Trigger

from rlstack_common.param_table import declare_all
from rlstack_testing.parameters import ECHO_NODE


class EchoNode(Node):
    def __init__(self) -> None:
        super().__init__("echo_node")
        self.prefix = declare_all(self, ECHO_NODE).prefix
        self.count = 0
        self.pub = self.create_publisher(String, "out", 10)
        self.create_subscription(String, "in", self.on_message, 10)
        self.create_service(Trigger, "~/ping", self.on_ping)
        self.get_logger().info("echo_node ready")

    def on_message(self, msg: String) -> None:
        self.count += 1
        self.pub.publish(String(data=self.prefix + msg.data))

    def on_ping(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success = True
        response.message = str(self.count)
        return response


def main(args=None) -> int:
    ignore = "ignore_sigint:=true" in (args or sys.argv)
    rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO if ignore else None)
    if ignore:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    node = EchoNode()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
