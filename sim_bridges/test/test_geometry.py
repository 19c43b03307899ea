"""Unit tests of the pure-numpy helpers and contract types (no simulator)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim_bridges.contract import CameraIntrinsics, JointState, Pose, physics_steps_per_control
from sim_bridges.geometry import (
    OPTICAL_FROM_BODY,
    backproject_pixel,
    depth_from_zbuffer,
    diff_drive_twist,
    diff_drive_wheel_speeds,
    look_at_optical,
    matrix_to_quat,
    project_point,
    quat_from_rpy,
    quat_multiply,
    quat_to_matrix,
    yaw_from_quat,
)


def test_quaternion_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        q = q if q[3] >= 0 else -q
        np.testing.assert_allclose(matrix_to_quat(quat_to_matrix(q)), q, atol=1e-12)
    a, b = quat_from_rpy(0.1, 0.2, 0.3), quat_from_rpy(-0.4, 0.5, 1.0)
    np.testing.assert_allclose(quat_to_matrix(quat_multiply(a, b)), quat_to_matrix(a) @ quat_to_matrix(b), atol=1e-12)
    assert yaw_from_quat(quat_from_rpy(0, 0, 1.2)) == pytest.approx(1.2)


def test_optical_frame_convention():
    r = quat_to_matrix(OPTICAL_FROM_BODY)
    # optical z = body x (forward), optical x = -body y (right), optical y = -body z (down)
    np.testing.assert_allclose(r[:, 2], [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(r[:, 0], [0, -1, 0], atol=1e-12)
    np.testing.assert_allclose(r[:, 1], [0, 0, -1], atol=1e-12)
    pose = look_at_optical([0, 0, 1], [2, 0, 1])
    np.testing.assert_allclose(quat_to_matrix(pose.orientation), r, atol=1e-12)
    with pytest.raises(ValueError):
        look_at_optical([0, 0, 1], [0, 0, 0])


def test_project_backproject_round_trip():
    k = CameraIntrinsics.from_vertical_fov(320, 240, math.radians(60))
    assert k.cx == pytest.approx(159.5) and k.cy == pytest.approx(119.5)
    pose = look_at_optical([1.0, -2.0, 1.5], [0.0, 0.0, 0.4])
    point = np.array([0.2, 0.1, 0.5])
    u, v, d = project_point(point, k, pose)
    np.testing.assert_allclose(backproject_pixel(u, v, d, k, pose), point, atol=1e-12)


def test_zbuffer_linearisation():
    near, far = 0.1, 10.0
    z = np.array([0.1, 0.5, 2.0, 9.9])
    zbuf = (1 / near - 1 / z) / (1 / near - 1 / far)
    np.testing.assert_allclose(depth_from_zbuffer(zbuf, near, far), z, rtol=1e-6)
    assert np.isnan(depth_from_zbuffer(np.array([1.0]), near, far)[0])
    assert depth_from_zbuffer(zbuf, near, far).dtype == np.float32


def test_diff_drive_kinematics():
    left, right = diff_drive_wheel_speeds(0.5, 1.0, wheel_radius=0.1, track_width=0.4)
    assert (left, right) == pytest.approx((3.0, 7.0))
    assert diff_drive_twist(left, right, 0.1, 0.4) == pytest.approx((0.5, 1.0))


def test_physics_steps_per_control():
    assert physics_steps_per_control(240, 60) == 4
    assert physics_steps_per_control(240, 240) == 1
    for bad in (50, 0, -60, 480, float("nan")):
        with pytest.raises(ValueError):
            physics_steps_per_control(240, bad)


def test_types_are_frozen_and_read_only():
    pose = Pose([1, 2, 3])
    with pytest.raises(Exception):
        pose.position = np.zeros(3)
    with pytest.raises(ValueError):
        pose.position[0] = 5.0
    with pytest.raises(ValueError):
        Pose([1, 2])
    with pytest.raises(ValueError):
        JointState(("a", "b"), [0.0], [0.0, 0.0], [0.0, 0.0])
