"""The parameter table of ``train_node`` (:mod:`rlstack_learning.ros.train_node`; pure Python, no rclpy).

The node declares :data:`TRAIN_NODE` with ``rlstack_common.param_table.declare_all``;
``launch/params/train_node.yaml`` and the table in docs/reference/training.md are checked against
(generated from) it.
"""

from __future__ import annotations

import os
from typing import List

from rlstack_common.param_table import Param as P

__all__ = ["TRAIN_NODE"]

TRAIN_NODE: List[P] = [
    P("task", "cartpole", "Training config: config/train/<task>.yaml (or a path to one)"),
    P("algo", "", "Algorithm override (empty: the config's)"),
    P("total_timesteps", 0, "Step budget override (0: the config's)", 0, 2**31 - 1),
    P("seed", -1, "Seed override (-1: the config's)", -1, 2**31 - 1),
    P("eval_freq", 0, "Validation every N steps, in-process (0: the config's)", 0, 2**31 - 1),
    P("bridges", ["/sim_bridge"], "Lockstep bridges, one env each (their ~/step, ~/reset; transport standard: the "
      "prefix of their step_simulation, reset_simulation, '/' for the root)"),
    P("batch_bridge", "", "A batch_bridge node (all envs in one process, one round trip per batch step; num_envs = "
      "its num_envs); empty: one env per entry of bridges"),
    P("transport", "topics", "Single bridges: topics (commands and observations on the deployment topics), request "
      "(both in the step service call: one round trip, faster) or standard (only the ROS 2 standard simulation "
      "services, reset_simulation and step_simulation under each bridge's name, and the topics: any simulator that "
      "speaks simulation_interfaces)", constraints="one of: topics, request, standard"),
    P("verify", "before", "Command ordering check: before (steps=0 sync, exact) or after (one call, late commands "
      "counted)", constraints="one of: before, after"),
    P("timeout_s", 10.0, "Longest wait for a service answer or an observation, s", 0.1, 600.0),
    P("out_dir", os.path.join("out", "train_ros"), "Output root of run folders"),
    P("run", "", "Run folder name (empty: <algo>_ros_s<seed>_<time>)"),
    P("bundle_dir", "", "Export the best model to this bundle folder (empty: no export)"),
    P("export_episodes", 100, "Evaluation episodes per condition in the bundle", 1, 100000),
    P("progress_period_s", 1.0, "Progress message period, s of wall time", 0.01, 3600.0),
    P("progress_bar", False, "Also show the tqdm/rich progress bar on stdout"),
]
