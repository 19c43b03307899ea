"""The grasp-pose estimator (rlstack_perception.grasp_pose): geometry helpers, real PyBullet views
from where the fetch robot docks, fusion of views, and bad input (a reason, never an exception)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlstack_perception.frame import Frame
from rlstack_perception.grasp_pose import (
    BAD_INPUT,
    POSE_UNCERTAIN,
    TARGET_NOT_VISIBLE,
    GraspPose,
    convex_hull,
    estimate_grasp_pose,
    fuse_estimates,
    min_area_rectangle,
    polygon_area,
    wrap_quarter,
)


@pytest.mark.parametrize("angle", [0.0, 0.3, -0.6, 1.2, 2.0])
def test_min_area_rectangle_of_a_rotated_rectangle(angle):
    rng = np.random.default_rng(0)
    local = rng.uniform([-0.03, -0.02], [0.03, 0.02], size=(400, 2))
    local = np.vstack([local, [[-0.03, -0.02], [0.03, -0.02], [0.03, 0.02], [-0.03, 0.02]]])
    c, s = math.cos(angle), math.sin(angle)
    pts = local @ np.array([[c, s], [-s, c]]) + [0.5, -0.2]
    centre, sides, got = min_area_rectangle(pts)
    np.testing.assert_allclose(centre, [0.5, -0.2], atol=1e-9)
    assert sorted(sides) == pytest.approx([0.04, 0.06], abs=1e-9)
    assert abs(wrap_quarter(got - angle)) < 1e-9
    assert polygon_area(convex_hull(pts)) == pytest.approx(0.06 * 0.04, rel=1e-9)


def test_wrap_quarter():
    assert wrap_quarter(math.radians(50)) == pytest.approx(math.radians(-40))
    assert wrap_quarter(math.radians(-46)) == pytest.approx(math.radians(44))
    assert wrap_quarter(math.pi) == pytest.approx(0.0, abs=1e-12)


@pytest.fixture(scope="module")
def views():
    from rlstack_perception.evaluate_grasp_pose import evaluate
    from sim_bridges.sensor_noise import DepthNoise

    return evaluate(layouts=3, views=2, seed=3, progress=False, depth_noise=DepthNoise())


def test_docking_views_in_home_are_accurate(views):
    """Real renders of the home scene from the fetch robot's docking poses, with the RGB-D depth
    noise model (robot mode; the estimator's far-edge correction is set for such a camera)."""
    tables = views["groups"]["on tables"]
    assert tables["usable"] >= 0.9 * tables["views"] > 0
    assert tables["err_xy_m"]["median"] < 0.004 and tables["err_xy_m"]["p95"] < 0.008
    assert tables["err_z_m"]["p95"] < 0.006
    cubes = views["groups"]["cubes"]
    assert cubes["usable"] > 0 and cubes["err_yaw_deg"]["median"] < 6.0 and cubes["symmetric_share"] < 0.5
    assert views["groups"]["balls"]["symmetric_share"] >= 0.7


def _flat_frame(depth_value=1.0, size=(60, 80)):
    h, w = size
    rgb = np.zeros((h, w, 3), np.uint8)
    depth = np.full((h, w), depth_value, np.float32)
    # looking straight down from 1 m: optical z = -z of the output frame
    rot = np.array([[1.0, 0, 0], [0, -1.0, 0], [0, 0, -1.0]])
    return Frame(rgb, depth, 80.0, 80.0, w / 2, h / 2, rot, np.array([0.0, 0.0, 1.0]))


def test_an_empty_table_is_target_not_visible():
    est = estimate_grasp_pose(_flat_frame(), [0.0, 0.0, 0.02])
    assert not est.ok and est.reason.startswith(TARGET_NOT_VISIBLE)


def test_a_box_seen_from_above_and_a_hint_off_by_a_few_cm():
    frame = _flat_frame(size=(240, 320))
    frame.fx = frame.fy = 320.0
    pts, _ = frame.points_world()
    inside = (np.abs(pts[..., 0] - 0.05) < 0.025) & (np.abs(pts[..., 1] + 0.02) < 0.025)
    frame.depth[inside] = 0.95     # a 5 cm box on the floor at (0.05, -0.02)
    est = estimate_grasp_pose(frame, [0.08, 0.0, 0.03])
    assert est.ok, est.reason
    np.testing.assert_allclose(est.centre, [0.05, -0.02, 0.025], atol=0.004)
    assert est.support_height == pytest.approx(0.0, abs=0.003) and not est.symmetric
    assert est.size[2] == pytest.approx(0.05, abs=0.004)


@pytest.mark.parametrize("hint, frame_change, reason", [
    ([float("nan"), 0.0, 0.0], None, BAD_INPUT),
    ([0.0, 0.0], None, BAD_INPUT),
    ([0.0, 0.0, 0.0], "nan_depth", BAD_INPUT),
    ([0.0, 0.0, 0.0], "bad_intrinsics", BAD_INPUT),
    ([0.0, 0.0, 0.0], "wrong_shape", BAD_INPUT),
])
def test_bad_input_gives_a_reason_not_an_exception(hint, frame_change, reason):
    frame = _flat_frame()
    if frame_change == "nan_depth":
        frame.depth[:] = np.nan
    elif frame_change == "bad_intrinsics":
        frame.fx = float("inf")
    elif frame_change == "wrong_shape":
        frame.depth = frame.depth[:, :10]
    est = estimate_grasp_pose(frame, hint)
    assert not est.ok and est.reason.startswith(reason), est.reason


def _pose(centre, yaw=0.1, q=1.0, ok=True, symmetric=False):
    return GraspPose(ok, "" if ok else f"{TARGET_NOT_VISIBLE}: x", np.array(centre, float), yaw, np.array([0.05] * 3),
                     0.5, symmetric, 100, 0.97, q)


def test_fuse_agreeing_and_disagreeing_views():
    f = fuse_estimates([_pose([0.5, 0.0, 0.5], 0.10), _pose([0.505, 0.0, 0.5], 0.12),
                        _pose([0.0, 0.0, 0.0], ok=False)])
    assert f.consistent and f.views == 2 and f.pose.ok
    np.testing.assert_allclose(f.pose.centre, [0.5025, 0.0, 0.5], atol=1e-9)
    assert f.pose.yaw == pytest.approx(0.11, abs=1e-3)
    # yaw wraps at 45 deg: 44 and -44 deg are 2 deg apart, not 88
    f = fuse_estimates([_pose([0.5, 0, 0.5], math.radians(44)), _pose([0.5, 0, 0.5], math.radians(-44))])
    assert f.consistent and f.spread_yaw == pytest.approx(math.radians(1), abs=1e-6)
    f = fuse_estimates([_pose([0.5, 0.0, 0.5]), _pose([0.56, 0.0, 0.5])])
    assert not f.consistent and f.pose.reason.startswith(POSE_UNCERTAIN)
    f = fuse_estimates([_pose([0, 0, 0], ok=False)])
    assert not f.pose.ok and f.views == 0 and TARGET_NOT_VISIBLE in f.pose.reason


def test_in_frame_moves_centre_yaw_and_support_with_the_transform():
    """An estimate in base_link at the image's time, expressed in odom with that instant's transform."""
    from rlstack_perception.grasp_pose import in_frame

    a = math.radians(30.0)
    r = np.array([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0], [0.0, 0.0, 1.0]])
    t = np.array([2.0, -1.0, 0.08])
    est = in_frame(_pose([0.5, 0.1, 0.445], yaw=math.radians(20)), r, t)
    np.testing.assert_allclose(est.centre, r @ [0.5, 0.1, 0.445] + t, atol=1e-12)
    assert est.yaw == pytest.approx(math.radians(50 - 90), abs=1e-9)      # 20 + 30 deg, mod 90 into [-45, 45)
    assert est.support_height == pytest.approx(0.58)
    # a round footprint's yaw is still the rectangle's (a noisy cube top can read round): turned too
    assert in_frame(_pose([0.5, 0.1, 0.4], yaw=0.0, symmetric=True), r, t).yaw == pytest.approx(a, abs=1e-9)
    refused = _pose([0, 0, 0], ok=False)
    assert in_frame(refused, r, t) is refused


@pytest.mark.parametrize("sigma", [0.0, 0.007])
def test_a_cube_on_the_floor_seen_from_1_6_m_with_range_noise(sigma):
    """The robot sees a cube on the floor from ~1.6 m, where a D435-like camera's range noise is ~7 mm:
    the height thresholds widen to the noise, so the top face and the centre are still found (the old
    fixed thresholds gave TOO_FEW_POINTS for most such views)."""
    h, w = 240, 320
    frame = _flat_frame(depth_value=1.6, size=(h, w))
    frame.fx = frame.fy = 600.0
    frame.translation = np.array([0.0, 0.0, 1.6])
    pts, _ = frame.points_world()
    inside = (np.abs(pts[..., 0] - 0.02) < 0.025) & (np.abs(pts[..., 1] + 0.01) < 0.025)
    frame.depth[inside] = 1.55     # a 5 cm cube on the floor, 1.6 m below the camera
    frame.depth += np.random.default_rng(1).normal(0.0, sigma, size=frame.depth.shape).astype(np.float32)
    est = estimate_grasp_pose(frame, [0.05, 0.01, 0.03])
    assert est.ok, est.reason
    np.testing.assert_allclose(est.centre, [0.02, -0.01, 0.025], atol=0.005)
    assert est.size[2] == pytest.approx(0.05, abs=0.006)
