"""MuJoCo backend (``mujoco`` 3.x from PyPI; imported lazily by ``sim_bridges.make_backend``)."""

from .backend import MUJOCO_SCENES, MuJoCoBackend, renderer_status

__all__ = ["MUJOCO_SCENES", "MuJoCoBackend", "renderer_status"]
