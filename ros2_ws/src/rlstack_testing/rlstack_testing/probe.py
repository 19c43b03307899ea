"""A test-side ROS 2 node on the test's private domain.

The probe owns its own rclpy Context, so tests never touch the global default context and
several probes (several domains) can coexist in one interpreter. All waiting is done by
spinning the probe's executor until a condition holds or a timeout expires, and discovery
is awaited through graph counts (publishers, subscribers, services), never by sleeping.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, TypeVar

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, qos_profile_system_default

from rlstack_common.spin import spin_for, spin_until

T = TypeVar("T")
QoS = QoSProfile | int


class MessageQueue:
    """Messages received on one topic, in arrival order."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.messages: deque[Any] = deque()

    def __len__(self) -> int:
        return len(self.messages)

    def _append(self, msg: Any) -> None:
        self.messages.append(msg)

    def pop_all(self) -> list[Any]:
        items = list(self.messages)
        self.messages.clear()
        return items


class RosProbe:
    """A node for tests: wait for discovery, collect messages, publish, call services."""

    def __init__(self, domain_id: int, name: str = "test_probe", use_sim_time: bool = False) -> None:
        self.domain_id = domain_id
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(
            name, context=self.context,
            parameter_overrides=[rclpy.parameter.Parameter("use_sim_time", value=use_sim_time)],
        )
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._subscriptions: dict[str, Any] = {}
        self._clients: dict[tuple[type, str], Any] = {}

    # ------------------------------------------------------------------ waiting
    def spin_until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Spin the probe until ``predicate()`` is true; raise TimeoutError naming ``what``."""
        spin_until(self.executor, predicate, timeout, what, step=0.05)

    def spin_for(self, seconds: float) -> None:
        """Process callbacks for a fixed time (to observe that something does NOT happen)."""
        spin_for(self.executor, seconds, step=0.05)

    def wait_for_publishers(self, topic: str, count: int = 1, timeout: float = 15.0) -> None:
        self.spin_until(lambda: self.node.count_publishers(topic) >= count, timeout,
                        f"{count} publisher(s) on {topic}")

    def wait_for_subscribers(self, topic: str, count: int = 1, timeout: float = 15.0) -> None:
        self.spin_until(lambda: self.node.count_subscribers(topic) >= count, timeout,
                        f"{count} subscriber(s) on {topic}")

    def wait_for_node(self, name: str, namespace: str = "/", timeout: float = 15.0) -> None:
        self.spin_until(
            lambda: (name, namespace) in self.node.get_node_names_and_namespaces(), timeout,
            f"node {namespace.rstrip('/')}/{name}",
        )

    # ------------------------------------------------------------------ topics
    def subscribe(self, topic: str, msg_type: type, qos: QoS = 10) -> MessageQueue:
        """Start collecting ``topic`` now; returns the queue that fills while the probe spins."""
        queue = MessageQueue(topic)
        sub = self.node.create_subscription(msg_type, topic, queue._append, qos)
        self._subscriptions[f"{topic}#{len(self._subscriptions)}"] = sub
        return queue

    def collect(self, topic: str, msg_type: type, count: int = 1, timeout: float = 15.0,
                qos: QoS = 10) -> list[Any]:
        """Subscribe, wait for a publisher, and return the first ``count`` messages."""
        queue = self.subscribe(topic, msg_type, qos)
        self.wait_for_publishers(topic, timeout=timeout)
        self.spin_until(lambda: len(queue) >= count, timeout,
                        f"{count} message(s) on {topic} (got {len(queue)})")
        return list(queue.messages)[:count]

    def wait_for_messages(self, queue: MessageQueue, count: int, timeout: float = 15.0) -> list[Any]:
        """Wait until ``queue`` holds ``count`` messages; return them."""
        self.spin_until(lambda: len(queue) >= count, timeout,
                        f"{count} message(s) on {queue.topic} (got {len(queue)})")
        return list(queue.messages)

    def publisher(self, topic: str, msg_type: type, qos: QoS = 10, subscribers: int = 1,
                  timeout: float = 15.0):
        """Create a publisher and wait until ``subscribers`` subscriptions have matched it."""
        pub = self.node.create_publisher(msg_type, topic, qos)
        if subscribers:
            self.spin_until(lambda: pub.get_subscription_count() >= subscribers, timeout,
                            f"{subscribers} subscriber(s) to match our publisher on {topic}")
        return pub

    # ------------------------------------------------------------------ services
    def call(self, srv_type: type, name: str, request: Any, timeout: float = 15.0) -> Any:
        """Call a service and return its response; wait for the server first.

        The client is kept for later calls to the same service, so repeated calls measure
        the round trip and not client discovery.
        """
        client = self._clients.get((srv_type, name))
        fresh = client is None
        if fresh:
            client = self.node.create_client(srv_type, name, qos_profile=qos_profile_system_default)
            self._clients[(srv_type, name)] = client
        self.spin_until(client.service_is_ready, timeout, f"service {name}")
        if fresh:
            # "Ready" means this client matched the server's request topic; the server may not yet
            # have matched this client's response reader, and then drops the answer ("failed to send
            # response (timeout): client will not receive response", a smoke-graph test in CI-like
            # runs). A moment of discovery before the first request lets both directions match.
            self.spin_for(0.5)
        future = client.call_async(request)
        self.spin_until(future.done, timeout, f"the response of {name}")
        if future.exception() is not None:
            raise future.exception()
        return future.result()

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)

    def __enter__(self) -> "RosProbe":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
