"""Frame math shared by training, the policy node, the mission, perception, navigation and the
simulator backends: quaternions (x, y, z, w), rotation matrices, yaw, and pose composition along a
TF tree. Pure Python + math (no rclpy); :func:`quat_to_matrix` returns a numpy array (imported
when it is first called).

The ``tf_position`` derive op (:mod:`rlstack_bundle.derive`) composes a chain with
:func:`compose`; the mission (``rlstack_mission.frames``) uses :func:`walk_up` for its own
lookups, so both read ``/tf`` with the same arithmetic.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence, Tuple

Vec3 = Tuple[float, float, float]
Quat = Tuple[float, float, float, float]  # x, y, z, w


def yaw(q: Sequence[float]) -> float:
    """Yaw (about z) of a unit quaternion (x, y, z, w)."""
    x, y, z, w = (float(v) for v in q)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def quat_to_matrix(q: Sequence[float], normalize: bool = True):
    """3x3 rotation matrix (numpy) of the quaternion ``(x, y, z, w)``.

    ``normalize`` (default): any non-zero quaternion, scaled by its squared norm; ``ValueError`` for
    a zero or non-finite one (what a message from outside may carry). ``normalize=False``: the
    quaternion is taken as unit and nothing is checked (a simulator's own poses, on its hot path).
    """
    import numpy as np

    x, y, z, w = (float(v) for v in q)
    if normalize:
        n = x * x + y * y + z * z + w * w
        if n < 1e-12 or not math.isfinite(n):
            raise ValueError("invalid quaternion: zero or not finite")
        s = 2.0 / n
    else:
        s = 2
    return np.array([
        [1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
        [s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)],
        [s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)],
    ])


def wrap_quarter(angle: float) -> float:
    """An angle mod 90 deg, in [-pi/4, pi/4): the yaw of a square footprint, and the gripper yaw that
    squares the fingers to it (the lift env and the fetch mission both take it from here, so the
    wrist turn served is the one trained)."""
    q = math.pi / 2.0
    return (float(angle) + q / 2.0) % q - q / 2.0


def quat_mul(a: Sequence[float], b: Sequence[float]) -> Quat:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


def quat_rotate(q: Sequence[float], v: Sequence[float]) -> Vec3:
    x, y, z, w = q
    vx, vy, vz = v
    # v' = v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z)
    cx, cy, cz = y * vz - z * vy, z * vx - x * vz, x * vy - y * vx
    ccx, ccy, ccz = y * cz - z * cy, z * cx - x * cz, x * cy - y * cx
    return (vx + 2.0 * (w * cx + ccx), vy + 2.0 * (w * cy + ccy), vz + 2.0 * (w * cz + ccz))


def compose(lookup: Mapping[str, Tuple[str, Vec3, Quat]], parent: str, child: str,
            max_depth: int = 64) -> Tuple[Vec3, Quat]:
    """Pose of ``child`` in ``parent`` from ``lookup[frame] = (its parent, translation, rotation xyzw)``
    (a TF tree: each frame has one parent). Walks up from ``child``; KeyError naming the first
    frame that has no known parent when ``parent`` is not an ancestor."""
    _, pos, rot = walk_up(lookup, child, parent, max_depth)
    return pos, rot


def walk_up(lookup: Mapping[str, Tuple[str, Vec3, Quat]], child: str, ancestor: Optional[str] = None,
            max_depth: int = 64) -> Tuple[str, Vec3, Quat]:
    """(frame reached, pose of ``child`` in it): walk up the tree from ``child`` to ``ancestor``, or
    with ``ancestor=None`` to the root (the first frame without a known parent)."""
    pos: Vec3 = (0.0, 0.0, 0.0)
    rot: Quat = (0.0, 0.0, 0.0, 1.0)
    frame = child
    for _ in range(max_depth):
        if frame == ancestor:
            return frame, pos, rot
        if frame not in lookup:
            if ancestor is None:
                return frame, pos, rot
            raise KeyError(f"no transform to frame '{frame}' (chain {ancestor} -> {child})")
        up, t, q = lookup[frame]
        # pose in 'up' = T(up<-frame) * pose in 'frame'
        r = quat_rotate(q, pos)
        pos = (t[0] + r[0], t[1] + r[1], t[2] + r[2])
        rot = quat_mul(q, rot)
        frame = up
    raise KeyError(f"transform chain {ancestor or 'root'} -> {child} longer than {max_depth} frames (a loop?)")
