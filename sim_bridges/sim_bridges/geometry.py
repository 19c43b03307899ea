"""Small, dependency-free (numpy only) geometry helpers shared by backends and tests.

Quaternions are ``(x, y, z, w)``; rotation matrices act on column vectors.
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np

from rlstack_bundle.frames import quat_to_matrix as _quat_to_matrix

from .contract import CameraIntrinsics, Pose

__all__ = [
    "quat_to_matrix",
    "matrix_to_quat",
    "quat_multiply",
    "quat_from_rpy",
    "yaw_from_quat",
    "OPTICAL_FROM_BODY",
    "look_at_optical",
    "backproject_pixel",
    "project_point",
    "depth_from_zbuffer",
    "diff_drive_wheel_speeds",
    "diff_drive_twist",
]


def quat_to_matrix(q: Sequence[float]) -> np.ndarray:
    """3x3 rotation matrix of a unit quaternion xyzw (``rlstack_bundle.frames.quat_to_matrix``,
    taken as unit: the simulator's own poses, unchecked)."""
    return _quat_to_matrix(q, normalize=False)


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternion xyzw (w >= 0) of a rotation matrix (Shepperd's method)."""
    m = np.asarray(m, dtype=float)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    return -q if q[3] < 0 else q


def quat_multiply(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """Hamilton product ``a * b`` (apply ``b`` first, then ``a``)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def quat_from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Quaternion of fixed-axis roll (x), pitch (y), yaw (z), i.e. ``Rz * Ry * Rx`` (URDF rpy)."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return np.array(
        [
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy,
        ]
    )


def yaw_from_quat(q: Sequence[float]) -> float:
    """Heading (rotation about z) of a quaternion xyzw."""
    x, y, z, w = q
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


#: Rotation taking a REP 103 body frame (x fwd, y left, z up) to the optical frame
#: (z fwd, x right, y down): ``R_body_optical`` with columns = optical axes in body.
OPTICAL_FROM_BODY = quat_from_rpy(-math.pi / 2, 0.0, -math.pi / 2)


def look_at_optical(eye: Sequence[float], target: Sequence[float]) -> Pose:
    """Optical-frame pose of a camera at ``eye`` looking at ``target`` with world z up.

    :raises ValueError: if the viewing direction is vertical (up vector undefined)
    """
    eye = np.asarray(eye, dtype=float)
    z = np.asarray(target, dtype=float) - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, [0.0, 0.0, 1.0])  # right = forward x up
    if np.linalg.norm(x) < 1e-9:
        raise ValueError("look_at_optical: viewing direction is parallel to world z")
    x /= np.linalg.norm(x)
    y = np.cross(z, x)  # down
    return Pose(eye, matrix_to_quat(np.column_stack([x, y, z])))


def backproject_pixel(
    u: float,
    v: float,
    depth: float,
    intrinsics: CameraIntrinsics,
    camera_pose: Pose,
) -> np.ndarray:
    """World point seen at pixel ``(u, v)`` (column, row) with metric ``depth`` (optical z).

    :param camera_pose: pose of the *optical* frame in the world frame
    :return: (3,) point in the world frame
    """
    p_opt = np.array(
        [
            (u - intrinsics.cx) * depth / intrinsics.fx,
            (v - intrinsics.cy) * depth / intrinsics.fy,
            depth,
        ]
    )
    return quat_to_matrix(camera_pose.orientation) @ p_opt + camera_pose.position


def project_point(
    point_world: Sequence[float], intrinsics: CameraIntrinsics, camera_pose: Pose
) -> Tuple[float, float, float]:
    """Inverse of :func:`backproject_pixel`: ``(u, v, depth)`` of a world point."""
    r = quat_to_matrix(camera_pose.orientation)
    p = r.T @ (np.asarray(point_world, dtype=float) - camera_pose.position)
    return (
        intrinsics.fx * p[0] / p[2] + intrinsics.cx,
        intrinsics.fy * p[1] / p[2] + intrinsics.cy,
        float(p[2]),
    )


def depth_from_zbuffer(zbuf: np.ndarray, near: float, far: float) -> np.ndarray:
    """Metric depth (float32, NaN beyond the far plane) from an OpenGL [0, 1] depth buffer.

    Inverts the perspective mapping ``d = (1/near - 1/z) / (1/near - 1/far)``,
    i.e. ``z = far * near / (far - (far - near) * d)``.
    """
    zbuf = np.asarray(zbuf, dtype=np.float64)
    depth = (far * near) / (far - (far - near) * zbuf)
    # d == 1 means the ray hit the far plane: report "no return" like a real sensor.
    depth[zbuf >= 1.0 - 1e-7] = np.nan
    return depth.astype(np.float32)


def diff_drive_wheel_speeds(
    linear_x: float, angular_z: float, wheel_radius: float, track_width: float
) -> Tuple[float, float]:
    """Wheel angular speeds ``(left, right)`` in rad/s for a body twist (unicycle model)."""
    half = 0.5 * track_width * angular_z
    return (linear_x - half) / wheel_radius, (linear_x + half) / wheel_radius


def diff_drive_twist(
    omega_left: float, omega_right: float, wheel_radius: float, track_width: float
) -> Tuple[float, float]:
    """Body twist ``(linear_x, angular_z)`` from wheel angular speeds (inverse of the above)."""
    return (
        0.5 * wheel_radius * (omega_left + omega_right),
        wheel_radius * (omega_right - omega_left) / track_width,
    )
