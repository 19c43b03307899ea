"""QoS profiles that several nodes must agree on.

``TF_STATIC``: ``/tf_static`` as tf2 reads it. Every publisher latches one message there (the
bridge: the camera mount; navigation: ``map -> odom``), and a late subscriber receives one per
publisher at once: a history of 1 kept only the last, and the mission once lost ``map -> odom``
that way (docs/reference/mission.md). ``LATCHED``: one latched message per topic (``/map``, states).
``SENSOR``: camera images, depth and camera_info as subscribers request them: rclpy's
``qos_profile_sensor_data`` (best effort, volatile) with a history of 2 instead of 5. Every camera
consumer works on the latest frame, and with 5 queued frames nav_controller's depth callbacks held
its /odom callbacks back past ``odom_timeout_s`` (tests/test_nav_controller.py, blocked path). A
best-effort volatile request matches both a reliable publisher (the sim bridge) and a best-effort
one (most real camera drivers); a reliable request never connects to a best-effort driver.
:func:`sensor_subscription` creates such a subscription with :func:`incompatible_qos_logger`
attached. docs/reference/qos.md lists every topic.
"""

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

__all__ = ["LATCHED", "SENSOR", "TF_STATIC", "incompatible_qos_logger", "sensor_subscription"]

TF_STATIC = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)
LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
SENSOR = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2, reliability=ReliabilityPolicy.BEST_EFFORT,
                    durability=DurabilityPolicy.VOLATILE)


def _policy_name(kind) -> str:
    name = getattr(kind, "name", str(kind))
    return name.replace("RMW_QOS_POLICY_", "").lower()


def incompatible_qos_logger(node, topic: str, requested: QoSProfile):
    """Subscription event callbacks that log one line (once per policy) when a publisher on
    ``topic`` offers QoS that ``requested`` cannot match, naming the policy and what to change."""
    from rclpy.event_handler import SubscriptionEventCallbacks

    seen = set()

    def on_incompatible(info) -> None:
        policy = _policy_name(info.last_policy_kind)
        if policy in seen:
            return
        seen.add(policy)
        node.get_logger().error(
            f"{topic}: a publisher's QoS is incompatible with this subscription ({policy}; requested "
            f"{requested.reliability.name.lower()}, {requested.durability.name.lower()}, depth {requested.depth}): "
            f"no messages arrive until the publisher offers a {policy} this request accepts "
            f"(`ros2 topic info -v {topic}` shows both sides)")

    return SubscriptionEventCallbacks(incompatible_qos=on_incompatible)


def sensor_subscription(node, msg_type, topic: str, callback, qos: QoSProfile = SENSOR, **kwargs):
    """``node.create_subscription`` with ``qos`` (default :data:`SENSOR`) and the incompatible-QoS
    logger attached; extra keyword arguments (``callback_group``, ``raw``) pass through."""
    return node.create_subscription(msg_type, topic, callback, qos,
                                    event_callbacks=incompatible_qos_logger(node, topic, qos), **kwargs)
