"""smoke_talker: publishes one labelled object and checks, by a service call, that it was heard.

Topics:   publishes ``objects`` (rlstack_interfaces/SemanticObject) at ``rate_hz``;
          publishes ``~/round_trips`` (std_msgs/UInt32): how many queries found our object.
Services: calls ``query_objects`` (rlstack_interfaces/QueryObjects) every ``query_period_s``.
"""

from __future__ import annotations

import sys

from rclpy.node import Node
from std_msgs.msg import UInt32

from rlstack_common import run_node
from rlstack_common.param_table import declare_all
from rlstack_interfaces.msg import SemanticObject
from rlstack_interfaces.srv import QueryObjects
from rlstack_smoke.parameters import SMOKE_TALKER


class SmokeTalker(Node):
    def __init__(self) -> None:
        super().__init__("smoke_talker")
        v = declare_all(self, SMOKE_TALKER)
        rate_hz, self.query_period_s, self.label, self.object_id = v.rate_hz, v.query_period_s, v.label, v.object_id
        self.round_trips = 0
        self.objects_pub = self.create_publisher(SemanticObject, "objects", 10)
        self.round_trips_pub = self.create_publisher(UInt32, "~/round_trips", 10)
        self.client = self.create_client(QueryObjects, "query_objects")
        self.pending = None
        self.create_timer(1.0 / rate_hz, self.publish_object)
        self.create_timer(self.query_period_s, self.query)
        self.get_logger().info(f"publishing '{self.label}' at {rate_hz:g} Hz")

    def publish_object(self) -> None:
        msg = SemanticObject(id=self.object_id, label=self.label, confidence=1.0, observations=1)
        msg.position.x, msg.position.y, msg.position.z = 1.0, 2.0, 0.5
        msg.last_seen = self.get_clock().now().to_msg()
        self.objects_pub.publish(msg)

    def query(self) -> None:
        # One call in flight at a time: a slow server must not pile up requests.
        if self.pending is not None or not self.client.service_is_ready():
            return
        self.pending = self.client.call_async(QueryObjects.Request(text=self.label, max_results=5))
        self.pending.add_done_callback(self.on_answer)

    def on_answer(self, future) -> None:
        self.pending = None
        response = future.result()
        if response is not None and any(m.object.id == self.object_id for m in response.matches):
            self.round_trips += 1
            self.round_trips_pub.publish(UInt32(data=self.round_trips))


def main(args: list[str] | None = None) -> int:
    return run_node(SmokeTalker, args)


if __name__ == "__main__":
    sys.exit(main())
