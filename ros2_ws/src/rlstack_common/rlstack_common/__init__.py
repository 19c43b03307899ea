"""Helpers shared by rlstack packages.

``declare_parameter``, ``run_node`` and ``use_small_message_profile`` are what every node
uses (thin rclpy adapters; no algorithms here). ``rlstack_common.atomic`` holds atomic file
and directory writes for the pure cores (checkpoints, bundles, saved maps). The node helpers
are loaded on first use, so ``import rlstack_common.atomic`` does not import rclpy.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "declare_parameter": "rlstack_common.params",
    "run_node": "rlstack_common.node_main",
    "use_small_message_profile": "rlstack_common.node_main",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'rlstack_common' has no attribute {name!r}")
