"""rlstack_learning: Gymnasium tasks on sim_bridges, SB3 training, ONNX policy bundles (no rclpy)."""

from .envs import ENVS, register_all

register_all()

__all__ = ["ENVS", "register_all"]
