"""Small 2-D / 3-D frame maths shared by nav_controller and the localizer (pure; no rclpy).

SE(2) poses are ``(x, y, yaw)``. :func:`tf_to_matrix` and :func:`stamp_s` read the fields of ROS
messages (``geometry_msgs/Transform``, ``builtin_interfaces/Time``) by name and import nothing.
"""

from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import numpy as np

from rlstack_nav.obstacles import quat_to_matrix

__all__ = ["se2_compose", "se2_inverse", "stamp_s", "static_chain", "tf_to_matrix"]

SE2 = Tuple[float, float, float]


def se2_compose(a: SE2, b: SE2) -> SE2:
    ax, ay, at = a
    bx, by, bt = b
    c, s = math.cos(at), math.sin(at)
    return ax + c * bx - s * by, ay + s * bx + c * by, math.atan2(math.sin(at + bt), math.cos(at + bt))


def se2_inverse(a: SE2) -> SE2:
    x, y, t = a
    c, s = math.cos(t), math.sin(t)
    return -c * x - s * y, s * x - c * y, -t


def tf_to_matrix(t) -> np.ndarray:
    """4x4 matrix of a transform with ``rotation`` (x, y, z, w) and ``translation`` (x, y, z).

    Raises ValueError for a non-finite translation or a zero / non-finite quaternion (a reader
    rejects and counts the transform instead of storing garbage or crashing)."""
    m = np.eye(4)
    q = t.rotation
    m[:3, :3] = quat_to_matrix((q.x, q.y, q.z, q.w))
    xyz = (t.translation.x, t.translation.y, t.translation.z)
    if not all(math.isfinite(v) for v in xyz):
        raise ValueError("non-finite translation")
    m[:3, 3] = xyz
    return m


def stamp_s(stamp) -> float:
    """Seconds of a stamp with ``sec`` and ``nanosec``."""
    return stamp.sec + 1e-9 * stamp.nanosec


def static_chain(static_tf: Dict[str, Tuple[str, np.ndarray]], base_frame: str, frame: str,
                 max_links: int) -> Optional[np.ndarray]:
    """Pose of ``frame`` in ``base_frame`` from ``child -> (parent, matrix)`` links (static transforms):
    None when they do not connect within ``max_links`` links."""
    m = np.eye(4)
    for _ in range(max_links + 1):
        if frame == base_frame:
            return m
        link = static_tf.get(frame)
        if link is None:
            return None
        parent, t = link
        m = t @ m
        frame = parent
    return None
