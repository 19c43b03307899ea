"""Isaac Sim support: conversion code, a backend and a launcher (Isaac Sim imported lazily only).

**This has never run on Isaac Sim.** Isaac Sim cannot be installed on the project's machines
(its PyPI packages are placeholders that fetch the real wheels from NVIDIA's index, which is
unreachable here). ``conversions``: the conventions that differ between Isaac Sim 5.1's Python API
and the ``sim_bridges`` contract, unit-tested everywhere. ``backend`` (``IsaacSimBackend``) and
``launcher`` (Isaac Sim's app + the bridge node): written against the 5.1 API, importable without
Isaac Sim, never executed against it. See ``sim_bridges/README.md`` (Isaac Sim) for what is and is not done.
"""

from .conversions import (
    JointOrder,
    body_twist,
    depth_from_distance_to_camera,
    intrinsics_from_usd_camera,
    object_prim_args,
    optical_from_usd_camera,
    quat_wxyz_to_xyzw,
    quat_xyzw_to_wxyz,
    relative_pose,
    require_isaacsim,
    usd_camera_from_optical,
    usd_camera_params,
    wheel_velocity_targets,
)

__all__ = [
    "JointOrder",
    "body_twist",
    "object_prim_args",
    "relative_pose",
    "depth_from_distance_to_camera",
    "intrinsics_from_usd_camera",
    "optical_from_usd_camera",
    "quat_wxyz_to_xyzw",
    "quat_xyzw_to_wxyz",
    "require_isaacsim",
    "usd_camera_from_optical",
    "usd_camera_params",
    "wheel_velocity_targets",
]
