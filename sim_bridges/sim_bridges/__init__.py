"""sim_bridges: simulator backend contract and its PyBullet implementation.

Pure Python (no ROS imports): ROS nodes, training environments, tests and
benchmarks all drive simulators through :class:`SimBackend`.

Quick start::

    from sim_bridges import make_backend
    with make_backend("pybullet") as sim:
        sim.load_scene("panda_table")
        sim.reset(seed=1)
        frame = sim.camera_frame("front_camera")
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Tuple

from .backend_scenes import PARTIAL_BACKEND_SCENES
from .contract import (
    CameraFrame,
    CameraIntrinsics,
    Capability,
    JointLimit,
    JointState,
    NotSupported,
    ObjectState,
    OccupancyBox,
    Odometry,
    Pose,
    SimBackend,
    Twist,
    physics_steps_per_control,
)
from .geometry import backproject_pixel, project_point
from .scenes import make_scene, scene_names

__version__ = "0.1.0"


def _pybullet(**kwargs: Any) -> SimBackend:
    # imported lazily so the contract stays usable without pybullet installed
    from .pybullet_backend import PyBulletBackend

    return PyBulletBackend(**kwargs)


class BackendUnavailable(RuntimeError):
    """A registered backend whose simulator is not installed here (one line says how to install it)."""


def _mujoco(**kwargs: Any) -> SimBackend:
    try:
        # the backend module chooses MUJOCO_GL before it imports mujoco: import it, not mujoco
        from .mujoco_backend import MuJoCoBackend
    except (ImportError, AttributeError, OSError, RuntimeError) as exc:
        missing = isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in ("mujoco", "OpenGL", "glfw")
        gl = os.environ.get("MUJOCO_GL", "")
        if not missing:
            if not gl:
                raise
            # `import mujoco` loads the GL platform MUJOCO_GL names: PyOpenGL fails with an
            # AttributeError when that library (e.g. libOSMesa) is absent, mujoco with a
            # RuntimeError for a name it does not know
            raise BackendUnavailable(
                f"backend 'mujoco': the GL platform MUJOCO_GL={gl} could not be loaded "
                f"({type(exc).__name__}: {str(exc)[:120]}); unset MUJOCO_GL to use the default "
                "(egl: Mesa's software EGL works on CPU-only machines), or set it to egl|osmesa|glfw "
                "with that platform's library installed (osmesa: apt install libosmesa6)") from None
        raise BackendUnavailable(
            f"backend 'mujoco' needs the 'mujoco' package (3.x), which is not importable here ({exc}); "
            "install it with: pip install -c requirements/constraints.txt mujoco "
            f"(available now: {', '.join(available_backends()) or 'none'})"
        ) from None
    return MuJoCoBackend(**kwargs)


#: Backend name -> factory. Isaac Sim is not registered: it cannot be installed here (docs).
BACKENDS: Dict[str, Callable[..., SimBackend]] = {"pybullet": _pybullet, "mujoco": _mujoco}

#: Backend name -> the Python module its simulator needs.
_BACKEND_MODULES: Dict[str, str] = {"pybullet": "pybullet", "mujoco": "mujoco"}


def available_backends() -> Tuple[str, ...]:
    """Registered backends whose simulator is importable in this environment."""
    import importlib.util

    return tuple(n for n in sorted(BACKENDS)
                 if importlib.util.find_spec(_BACKEND_MODULES.get(n, n)) is not None)


#: Backends that build only some scenes (the others build every registered scene).
_BACKEND_SCENES: Dict[str, Tuple[str, ...]] = PARTIAL_BACKEND_SCENES


def backend_scenes(name: str) -> Tuple[str, ...]:
    """Scenes backend ``name`` builds (without importing its simulator)."""
    return _BACKEND_SCENES.get(name, scene_names())


def backend_names() -> Tuple[str, ...]:
    """Registered backend names."""
    return tuple(sorted(BACKENDS))


def make_backend(name: str = "pybullet", **kwargs: Any) -> SimBackend:
    """Create a backend by name (kwargs go to its constructor).

    :raises ValueError: for an unknown backend, listing the valid ones
    :raises BackendUnavailable: the backend's simulator is not installed (message says how)
    """
    if name in ("isaac", "isaacsim") and name not in BACKENDS:
        import importlib.util

        if importlib.util.find_spec("isaacsim") is None:
            raise BackendUnavailable(
                "backend 'isaac' needs Isaac Sim 5.1 (module 'isaacsim'), which is not installed here: it comes from "
                "NVIDIA's own index (pip install isaacsim[all]==5.1.* --extra-index-url https://pypi.nvidia.com) and "
                f"needs an RTX GPU; the backend (sim_bridges.isaac) has never run on Isaac Sim; available now: "
                f"{', '.join(available_backends()) or 'none'}")
        raise BackendUnavailable(
            "backend 'isaac' runs inside Isaac Sim's app: start it with python -m sim_bridges.isaac.launcher "
            "(SimulationApp first, then the bridge); it has never run on Isaac Sim")
    try:
        factory = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; valid backends: {', '.join(backend_names())}") from None
    return factory(**kwargs)


__all__ = [
    "BACKENDS",
    "BackendUnavailable",
    "available_backends",
    "backend_scenes",
    "CameraFrame",
    "CameraIntrinsics",
    "Capability",
    "JointLimit",
    "JointState",
    "NotSupported",
    "ObjectState",
    "OccupancyBox",
    "Odometry",
    "Pose",
    "SimBackend",
    "Twist",
    "backend_names",
    "backproject_pixel",
    "make_backend",
    "make_scene",
    "physics_steps_per_control",
    "project_point",
    "scene_names",
]
