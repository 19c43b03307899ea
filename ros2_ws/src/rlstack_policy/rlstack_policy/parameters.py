"""The parameter table of policy_node (pure Python, no rclpy).

The node declares it with ``rlstack_common.param_table.declare_all``; the ``launch/params/policy_*.yaml``
files and docs/reference/policy-node.md are checked against (generated from) it. ``bundle_path`` is
dynamic: setting it while configured swaps the bundle (the node's parameter callback).
"""

from __future__ import annotations

from typing import List

from rlstack_common.param_table import Param as P

__all__ = ["POLICY_NODE"]

POLICY_NODE: List[P] = [
    P("bundle_path", "", "Policy bundle folder (policy.onnx + io.yaml ...). Setting it while configured swaps the "
      "bundle at run time (refused if its topics do not match the wired ones)."),
    P("autostart", False, "Configure and activate at start (launch files); false: wait for lifecycle transitions "
      "(ros2 lifecycle set / lifecycle_msgs/srv/ChangeState)"),
    P("trigger", "timer", "Loop trigger: timer (at rate_hz on the node clock, sim time with use_sim_time) or "
      "message (one step when every observation topic has a new message; a watchdog at rate_hz gives the safe "
      "action when they stop)", constraints="one of: timer, message"),
    P("rate_hz", 0.0, "Control loop rate, Hz; 0 = the bundle's control_rate_hz", 0.0, 10000.0),
    P("stale_periods", 3.0, "An observation older than this many loop periods gives the safe action", 0.5, 1000.0),
    P("safe_action", [""], "Per action term: zero, hold (last command) or a number in the term's unit; [''] = from "
      "io.yaml safe_action, else zero"),
    P("max_rate", [-1.0], "Per action term rate limit, term unit per second (0 = none); [-1.0] = from io.yaml "
      "max_rate, else none"),
    P("key_indices", [""], "'key=index' for array elements without names (PoseArray), e.g. 'ball=0'"),
    P("topic_remaps", [""], "'/descriptor_topic=/actual_topic' for observation and action topics"),
    P("diagnostics_period_s", 1.0, "Period of /diagnostics, s (wall clock)", 0.05, 60.0),
    P("realtime_priority", 0, "SCHED_FIFO priority of the executor threads (1..99; 0 = normal scheduling). Needs "
      "CAP_SYS_NICE / rtprio; refused: a warning and normal scheduling", 0, 99),
]
