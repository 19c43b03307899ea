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

from typing import Any, Callable, Dict, Tuple

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


#: Backend name -> factory. Isaac Sim will register "isaac" here once it exists.
BACKENDS: Dict[str, Callable[..., SimBackend]] = {"pybullet": _pybullet}


def backend_names() -> Tuple[str, ...]:
    """Registered backend names."""
    return tuple(sorted(BACKENDS))


def make_backend(name: str = "pybullet", **kwargs: Any) -> SimBackend:
    """Create a backend by name (kwargs go to its constructor).

    :raises ValueError: for an unknown backend, listing the valid ones
    """
    try:
        factory = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; valid backends: {', '.join(backend_names())}") from None
    return factory(**kwargs)


__all__ = [
    "BACKENDS",
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
