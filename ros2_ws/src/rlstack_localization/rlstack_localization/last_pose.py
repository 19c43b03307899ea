"""The localiser's last ``map -> odom``, kept in a small file so that a respawned localiser goes on
where the dead one stopped. ROS 1's AMCL did the same through the parameter server
(``save_pose_rate``); Nav2's AMCL starts from its parameters again. No rclpy.

The file (JSON, written atomically) holds ``map_to_odom`` (x, y, yaw), the odometry stamp it was
computed at and the wall time it was written. A localiser that starts finds it usable when it is
younger than ``max_age_s``; the node core also ignores it when the first odometry is older than
the saved stamp (time went back: another run, or a simulator reset). A clean shutdown removes it:
only a process that died leaves one behind.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Optional, Tuple

from rlstack_common import atomic

Saved = Tuple[Tuple[float, float, float], float]   # (map_to_odom, odom stamp)


def save(path: str, map_to_odom: Tuple[float, float, float], odom_stamp: float) -> None:
    data = {"map_to_odom": [float(v) for v in map_to_odom], "odom_stamp": float(odom_stamp),
            "wall_time": time.time()}
    atomic.write_bytes(path, json.dumps(data).encode())


def load(path: str, max_age_s: float) -> Tuple[Optional[Saved], str]:
    """``(saved, why)``: the saved state, or None and why it is not used ('' when there is no file)."""
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read().decode())
        m2o = tuple(float(v) for v in data["map_to_odom"])
        stamp = float(data["odom_stamp"])
        written = float(data["wall_time"])
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"unreadable ({type(exc).__name__}: {exc})"
    if len(m2o) != 3 or not all(math.isfinite(v) for v in (*m2o, stamp, written)):
        return None, "not finite"
    age = time.time() - written
    if not 0.0 <= age <= max_age_s:
        return None, f"{age:.0f} s old (last_pose_max_age_s {max_age_s:g})"
    return (m2o, stamp), ""


def remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
