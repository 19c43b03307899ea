"""QoS profiles that several nodes must agree on.

``TF_STATIC``: ``/tf_static`` as tf2 reads it. Every publisher latches one message there (the
bridge: the camera mount; navigation: ``map -> odom``), and a late subscriber receives one per
publisher at once: a history of 1 kept only the last, and the mission once lost ``map -> odom``
that way (docs/reference/mission.md). ``LATCHED``: one latched message per topic (``/map``, states).
"""

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

__all__ = ["LATCHED", "TF_STATIC"]

TF_STATIC = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)
LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
