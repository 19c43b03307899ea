"""The parameter table of the harness's test node ``echo_node`` (pure Python, no rclpy).

``echo_node`` declares :data:`ECHO_NODE` with ``rlstack_common.param_table.declare_all``
(rlstack_common is imported at run time and not declared in package.xml, as in ``probe.py``: colcon
refuses the cycle through rlstack_common's test_depend). ``ignore_sigint:=true`` is read from the
command line, not declared.
"""

from __future__ import annotations

from typing import List

from rlstack_common.param_table import Param as P

__all__ = ["ECHO_NODE"]

ECHO_NODE: List[P] = [
    P("prefix", "echo: ", "Prefix put before each message republished from in to out"),
]
