"""Helpers shared by every rlstack node (thin rclpy adapters; no algorithms here)."""

from rlstack_common.node_main import run_node, use_small_message_profile
from rlstack_common.params import declare_parameter

__all__ = ["declare_parameter", "run_node", "use_small_message_profile"]
