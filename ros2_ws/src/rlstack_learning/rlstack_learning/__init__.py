"""rlstack_learning: Gymnasium tasks on sim_bridges, SB3 training, export to policy bundles (no rclpy).

This is the workstation side: it needs gymnasium (and, to train, torch and SB3). Policy bundles,
the seam to the robot side, are the separate package ``rlstack_bundle``: training writes them with
it, the policy node reads them with it, and nothing on the robot imports this package.

Importing the package registers every task with Gymnasium (``ENTRY_POINTS``: ``module:Class``
strings, so the env modules and sim_bridges load only at ``gym.make``). ``ENVS`` and
``register_all`` are loaded on first use (``rlstack_learning.envs``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as _gym

#: env id -> entry point of every task (rlstack_learning.envs.ENVS; a unit test keeps them equal)
ENTRY_POINTS = {
    "RlStack/CartPole-v0": "rlstack_learning.envs.cartpole:CartPoleEnv",
    "RlStack/CartPoleDiscrete-v0": "rlstack_learning.envs.cartpole:CartPoleDiscreteEnv",
    "RlStack/BallPlate-v0": "rlstack_learning.envs.ball_plate:BallPlateEnv",
    "RlStack/BallPlatePixels-v0": "rlstack_learning.envs.ball_plate_pixels:BallPlatePixelsEnv",
    "RlStack/PandaLift-v0": "rlstack_learning.envs.lift:PandaLiftEnv",
    "RlStack/MobileLift-v0": "rlstack_learning.envs.mobile_lift:MobileLiftEnv",
    "RlStack/MobileLiftPerceived-v0": "rlstack_learning.envs.mobile_lift_perceived:MobileLiftPerceivedEnv",
}

for _env_id, _entry_point in ENTRY_POINTS.items():
    if _env_id not in _gym.registry:
        _gym.register(_env_id, entry_point=_entry_point)


def __getattr__(name: str) -> Any:
    if name in ("ENVS", "register_all"):
        from . import envs

        return getattr(envs, name)
    raise AttributeError(f"module 'rlstack_learning' has no attribute '{name}'")


__all__ = ["ENVS", "ENTRY_POINTS", "register_all"]
