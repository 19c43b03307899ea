"""Isaac Sim support: pure conversion code only (no Isaac Sim import anywhere in this package).

**This has never run on Isaac Sim.** Isaac Sim cannot be installed on the project's machines
(its PyPI packages are placeholders that fetch the real wheels from NVIDIA's index, which is
unreachable here). What is here is the part of an Isaac Sim backend that does not need Isaac Sim:
the conventions that differ between Isaac Sim 5.1's Python API and the ``sim_bridges`` contract,
unit-tested everywhere. See ``sim_bridges/README.md`` (Isaac Sim) for what is and is not done.
"""

from .conversions import (
    JointOrder,
    depth_from_distance_to_camera,
    intrinsics_from_usd_camera,
    optical_from_usd_camera,
    quat_wxyz_to_xyzw,
    quat_xyzw_to_wxyz,
    require_isaacsim,
    usd_camera_from_optical,
    usd_camera_params,
    wheel_velocity_targets,
)

__all__ = [
    "JointOrder",
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
