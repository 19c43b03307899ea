"""smoke_map: indexes the objects it hears and answers text queries about them.

Topics:   subscribes ``objects`` (rlstack_interfaces/SemanticObject).
Services: serves ``query_objects`` (rlstack_interfaces/QueryObjects).
Bad input (a non-finite position) is rejected, counted, and warned about once per 5 s.
"""

from __future__ import annotations

import math
import sys

from rclpy.node import Node

from rlstack_common import run_node
from rlstack_common.param_table import declare_all
from rlstack_interfaces.msg import ObjectMatch, SemanticObject
from rlstack_interfaces.srv import QueryObjects
from rlstack_smoke.label_index import LabelIndex
from rlstack_smoke.parameters import SMOKE_MAP


class SmokeMap(Node):
    def __init__(self) -> None:
        super().__init__("smoke_map")
        v = declare_all(self, SMOKE_MAP)
        self.frame_id, self.max_objects = v.frame_id, v.max_objects
        self.index = LabelIndex()
        self.rejected = 0
        self.create_subscription(SemanticObject, "objects", self.on_object, 10)
        self.create_service(QueryObjects, "query_objects", self.on_query)
        self.get_logger().info("ready: subscribed to objects, serving query_objects")

    def on_object(self, msg: SemanticObject) -> None:
        position = (msg.position.x, msg.position.y, msg.position.z)
        if not all(math.isfinite(v) for v in position):
            self.rejected += 1
            self.get_logger().warning(f"rejected object {msg.id}: non-finite position ({self.rejected} so far)",
                                   throttle_duration_sec=5.0)
            return
        if len(self.index) >= self.max_objects and msg.id not in self.index:
            self.rejected += 1
            self.get_logger().warning("map full: new objects are dropped", throttle_duration_sec=5.0)
            return
        self.index.observe(msg.id, msg.label, position)

    def on_query(self, request: QueryObjects.Request, response: QueryObjects.Response) -> QueryObjects.Response:
        response.header.frame_id = self.frame_id
        response.header.stamp = self.get_clock().now().to_msg()
        for entry, score in self.index.query(request.text, request.max_results, request.min_score):
            obj = SemanticObject(id=entry.object_id, label=entry.label, observations=entry.observations)
            obj.position.x, obj.position.y, obj.position.z = entry.position
            response.matches.append(ObjectMatch(object=obj, score=float(score)))
        response.success = True
        response.message = f"{len(response.matches)} match(es) among {len(self.index)} object(s)"
        return response


def main(args: list[str] | None = None) -> int:
    return run_node(SmokeMap, args)


if __name__ == "__main__":
    sys.exit(main())
