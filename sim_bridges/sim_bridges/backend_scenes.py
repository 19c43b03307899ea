"""Which scenes each partial backend builds (no simulator imported): read by the package registry
(``sim_bridges.backend_scenes()``) and by the backends themselves, so neither imports the other."""

from __future__ import annotations

from typing import Dict, Tuple

#: Backends that build only some scenes (the others build every registered scene).
PARTIAL_BACKEND_SCENES: Dict[str, Tuple[str, ...]] = {
    "mujoco": ("cartpole", "ball_plate", "panda_table", "mobile_table", "home", "home_kinds")}
