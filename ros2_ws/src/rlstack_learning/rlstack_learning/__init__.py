"""rlstack_learning: Gymnasium tasks on sim_bridges, SB3 training, ONNX policy bundles (no rclpy).

Importing the package is light: it imports no gymnasium, sim_bridges or torch, so a policy
node can use :mod:`rlstack_learning.bundle` (numpy, PyYAML, onnx, onnxruntime) and
:mod:`rlstack_learning.derive` (pure Python) alone. ``ENVS`` and ``register_all`` are loaded
on first use (``rlstack_learning.envs``). The tasks are still registered with Gymnasium
whenever both are imported, in either order: at once if gymnasium is already imported, else
right after ``import gymnasium`` (a one-shot import hook). Registration stores only
``module:Class`` entry points; the env modules load at ``gym.make``.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

#: env id -> entry point of every task (rlstack_learning.envs.ENVS; a unit test keeps them equal)
ENTRY_POINTS = {
    "RlStack/CartPole-v0": "rlstack_learning.envs.cartpole:CartPoleEnv",
    "RlStack/CartPoleDiscrete-v0": "rlstack_learning.envs.cartpole:CartPoleDiscreteEnv",
    "RlStack/BallPlate-v0": "rlstack_learning.envs.ball_plate:BallPlateEnv",
    "RlStack/PandaLift-v0": "rlstack_learning.envs.lift:PandaLiftEnv",
    "RlStack/MobileLift-v0": "rlstack_learning.envs.mobile_lift:MobileLiftEnv",
    "RlStack/MobileLiftPerceived-v0": "rlstack_learning.envs.mobile_lift_perceived:MobileLiftPerceivedEnv",
}


def _register_entry_points(gym: Any) -> None:
    for env_id, entry_point in ENTRY_POINTS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point)


class _RegisterAfterGymnasium(importlib.abc.MetaPathFinder):
    """Registers the tasks as soon as ``gymnasium`` has been imported (then removes itself)."""

    def find_spec(self, fullname, path, target=None):  # noqa: D401 - importlib API
        if fullname != "gymnasium":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        inner = spec.loader

        class _Loader(importlib.abc.Loader):
            def create_module(self, s):
                return inner.create_module(s)

            def exec_module(self, module):
                inner.exec_module(module)
                try:
                    _register_entry_points(module)
                except Exception:  # pragma: no cover - never break importing gymnasium
                    pass

        spec.loader = _Loader()
        return spec


if "gymnasium" in sys.modules:
    _register_entry_points(sys.modules["gymnasium"])
elif not any(isinstance(f, _RegisterAfterGymnasium) for f in sys.meta_path):
    sys.meta_path.insert(0, _RegisterAfterGymnasium())


def __getattr__(name: str) -> Any:
    if name in ("ENVS", "register_all"):
        from . import envs

        return getattr(envs, name)
    raise AttributeError(f"module 'rlstack_learning' has no attribute '{name}'")


__all__ = ["ENVS", "ENTRY_POINTS", "register_all"]
