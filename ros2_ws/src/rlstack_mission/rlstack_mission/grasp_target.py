"""HeldTargetPublisher: /grasp_target from the grasp target the mission holds in ``odom`` (robot mode).

``grasp_target_source: perception``: the grasp_pose service's estimate, made once before a grasp, is
held in ``odom`` (the hand hides the object while it works; holding it in odom keeps the arm's nudges
of the base from dragging it along) and re-expressed through /tf in the current ``base_link`` at twice
the control rate while it is held: what policies/mobile_lift_perceived was trained on.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np
from geometry_msgs.msg import PoseStamped

from .frames import TfTree, to_frame

__all__ = ["HeldTargetPublisher"]


class HeldTargetPublisher:
    """Publishes the held target on /grasp_target (geometry_msgs/PoseStamped in the base frame) from a
    timer of ``node`` that runs only while a target is held."""

    def __init__(self, node: Any, tf: TfTree, rate_hz: float, callback_group: Any) -> None:
        self._node, self._tf = node, tf
        self._pub = node.create_publisher(PoseStamped, "/grasp_target", 10)
        self._held: Optional[Tuple[Tuple[np.ndarray, np.ndarray], str, str]] = None   # target, its frame, base
        # Twice the lift's control rate: the policy node takes an input older than 3 control periods
        # (150 ms) as a dead source and holds still. At 20 Hz one timer tick late by more than 50 ms
        # (a busy 2-core machine, 4 Python threads here) did that mid-lift (seen in a soak log:
        # "stale /grasp_target (150 ms old > 150 ms)"); at 40 Hz a tick must be 100 ms late.
        # It runs only while a target is held: idle, its 40 wake-ups a second cost the executor a
        # tenth of a core.
        self._timer = node.create_timer(0.5 / rate_hz, self._publish, callback_group=callback_group)
        self._timer.cancel()

    def hold(self, target: Optional[Tuple[np.ndarray, np.ndarray]], odom_frame: str, base_frame: str) -> None:
        """Hold ``target`` (position, quaternion in ``odom_frame``) and publish it in ``base_frame``;
        None: stop."""
        self._held = None if target is None else (target, odom_frame, base_frame)
        if target is None:
            self._timer.cancel()
        elif self._timer.is_canceled():
            self._timer.reset()

    def _publish(self) -> None:
        held = self._held
        if held is None:
            return
        (position, quaternion), odom_frame, base_frame = held
        try:
            p_base, q_base = to_frame(self._tf, position, quaternion, odom_frame, base_frame)
        except KeyError as exc:
            self._node.get_logger().warning(f"grasp target: {exc}", throttle_duration_sec=5.0)
            return
        msg = PoseStamped()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.header.frame_id = base_frame
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in p_base)
        (msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z,
         msg.pose.orientation.w) = (float(v) for v in q_base)
        self._pub.publish(msg)
