"""rlstack_policy: serve policy bundles as ROS 2 lifecycle nodes (docs/reference/policy-node.md).

``rlstack_policy.core`` is the pure part (no rclpy): observation assembly from io.yaml terms,
staleness/NaN checks, clipping, rate limiting, safe action, e-stop latch, loop statistics.
``rlstack_policy.policy_node`` is the thin lifecycle node around it.
"""
