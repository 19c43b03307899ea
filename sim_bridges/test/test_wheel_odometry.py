"""sim_bridges.wheel_odometry: wheel odometry with a robot's errors (drift model)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim_bridges.wheel_odometry import DEFAULT_ERROR_FIGURES, OdometryErrors, WheelOdometry, error_figures

R, TRACK = 0.08, 0.42
DT = 1.0 / 60.0


def drive(odo: WheelOdometry, v: float, w: float, seconds: float, t0: float = 0.0, angles=(0.0, 0.0)):
    """Feed the wheel angles of a perfect base driving (v, w) for ``seconds``; returns the final angles."""
    left, right = angles
    wl, wr = (v - w * TRACK / 2) / R, (v + w * TRACK / 2) / R
    n = int(round(seconds / DT))
    odo.update(left, right, t0)
    for k in range(1, n + 1):
        left += wl * DT
        right += wr * DT
        odo.update(left, right, t0 + k * DT)
    return left, right


def test_exact_odometry_integrates_straight_lines_and_arcs():
    odo = WheelOdometry(R, TRACK, OdometryErrors.exact())
    drive(odo, 0.5, 0.0, 2.0)
    assert odo.pose == pytest.approx((1.0, 0.0, 0.0), abs=1e-9)
    odo.reset()
    drive(odo, 0.3, 0.3, 5.0)   # a circle of radius 1 m, 1.5 rad of it
    x, y, yaw = odo.pose
    assert (x, y) == pytest.approx((math.sin(1.5), 1 - math.cos(1.5)), abs=1e-5)
    assert yaw == pytest.approx(1.5, abs=1e-9)
    assert np.all(odo.cov == 0)


def test_systematic_errors_match_the_documented_figures():
    errors = OdometryErrors().with_(slip_xx=0.0, slip_thth=0.0, slip_ths=0.0, yaw_bias=0.0)
    figures = error_figures(errors, TRACK)
    odo = WheelOdometry(R, TRACK, errors)
    drive(odo, 0.5, 0.0, 2.0)   # 1 m true
    x, y, yaw = odo.pose
    assert math.degrees(yaw) == pytest.approx(figures["heading_deg_per_m"], rel=1e-3)
    assert 100 * (x - 1.0) == pytest.approx(figures["distance_pct"], abs=0.01)
    odo.reset()
    drive(odo, 0.0, 1.0, 1.0)   # 1 rad in place, true
    assert 100 * (odo.yaw - 1.0) == pytest.approx(figures["turn_pct"], rel=1e-3)


def test_yaw_bias_applies_only_while_moving():
    errors = OdometryErrors.exact().with_(yaw_bias=0.01)
    odo = WheelOdometry(R, TRACK, errors)
    left, right = drive(odo, 0.0, 0.0, 10.0)          # standing still: no drift
    assert odo.yaw == 0.0
    drive(odo, 0.3, 0.0, 2.0, t0=10.0, angles=(left, right))
    assert odo.yaw == pytest.approx(0.02, abs=1e-3)


def test_random_walk_grows_with_distance_as_documented_and_matches_the_covariance():
    errors = OdometryErrors.exact().with_(slip_xx=0.01, slip_ths=0.005)
    finals, covs = [], []
    for seed in range(200):
        odo = WheelOdometry(R, TRACK, errors, seed=seed)
        drive(odo, 0.5, 0.0, 8.0)   # 4 m
        finals.append(odo.pose)
        covs.append(odo.cov.copy())
    finals = np.array(finals)
    # distance: std = slip_xx * sqrt(4 m) = 2 cm
    assert np.std(finals[:, 0]) == pytest.approx(0.02, rel=0.2)
    assert np.std(finals[:, 2]) == pytest.approx(0.005 * 2.0, rel=0.2)
    emp = np.cov(finals.T)
    model = np.mean(covs, axis=0)
    for i in range(3):
        assert emp[i, i] == pytest.approx(model[i, i], rel=0.35)
    # the lateral error comes from the heading random walk: present in both, same sign of correlation
    assert model[1, 2] > 0 and emp[1, 2] > 0


def test_same_seed_same_drift_and_reset_restarts_the_noise():
    a = WheelOdometry(R, TRACK, OdometryErrors(), seed=7)
    b = WheelOdometry(R, TRACK, OdometryErrors(), seed=7)
    drive(a, 0.4, 0.2, 3.0)
    drive(b, 0.4, 0.2, 3.0)
    assert a.pose == b.pose
    first = a.pose
    a.reset()
    drive(a, 0.4, 0.2, 3.0)
    assert a.pose == first
    c = WheelOdometry(R, TRACK, OdometryErrors(), seed=8)
    drive(c, 0.4, 0.2, 3.0)
    assert c.pose != first


def test_default_drift_is_that_of_a_real_base_not_zero_and_not_absurd():
    f = DEFAULT_ERROR_FIGURES
    assert 0.3 < abs(f["heading_deg_per_m"]) < 3.0
    assert 0.05 < abs(f["distance_pct"]) < 2.0
    assert 1.0 < abs(f["turn_pct"]) < 5.0


def test_bad_input_is_rejected():
    with pytest.raises(ValueError):
        OdometryErrors(track_scale=float("nan"))
    with pytest.raises(ValueError):
        OdometryErrors(left_radius_scale=3.0)
    with pytest.raises(ValueError):
        OdometryErrors(slip_xx=-1.0)
    with pytest.raises(ValueError):
        WheelOdometry(0.0, TRACK)
    odo = WheelOdometry(R, TRACK)
    with pytest.raises(ValueError):
        odo.update(float("nan"), 0.0, 0.0)


def test_covariance6_layout():
    odo = WheelOdometry(R, TRACK, OdometryErrors(), seed=1)
    drive(odo, 0.5, 0.1, 4.0)
    c6 = odo.covariance6()
    assert c6.shape == (6, 6)
    assert c6[0, 0] == pytest.approx(odo.cov[0, 0]) and c6[5, 5] == pytest.approx(odo.cov[2, 2])
    assert c6[0, 5] == pytest.approx(odo.cov[0, 2]) and c6[5, 1] == pytest.approx(odo.cov[2, 1])
    assert np.allclose(c6, c6.T)


def test_exact_wheel_odometry_follows_the_simulated_base():
    """On the real PyBullet base driven with the bridge's acceleration ramp, error-free wheel
    odometry follows the truth within millimetres (the sim's wheels barely slip then; an abrupt
    step command slips several percent), and the default errors drift visibly more."""
    from sim_bridges import make_backend
    from sim_bridges.geometry import quat_to_matrix

    with make_backend("pybullet") as sim:
        sim.load_scene("home")
        js = sim.joint_state()
        il, ir = js.names.index("left_wheel_joint"), js.names.index("right_wheel_joint")
        exact = WheelOdometry(R, TRACK, OdometryErrors.exact())
        drifting = WheelOdometry(R, TRACK, OdometryErrors(), seed=3)
        for odo in (exact, drifting):
            odo.update(js.position[il], js.position[ir], sim.sim_time)
        cur = [0.0, 0.0]
        for v, w, n in ((0.4, 0.0, 180), (0.0, 0.0, 60), (0.0, 1.0, 120), (0.0, 0.0, 60), (0.3, 0.3, 150),
                        (0.0, 0.0, 60)):
            for _ in range(n):   # 1 m/s^2 and 3 rad/s^2, the bridge's default ramp
                cur[0] += max(-DT, min(DT, v - cur[0]))
                cur[1] += max(-3 * DT, min(3 * DT, w - cur[1]))
                sim.set_base_velocity(*cur)
                sim.step(1)
                js = sim.joint_state()
                for odo in (exact, drifting):
                    odo.update(js.position[il], js.position[ir], sim.sim_time)
        pose = sim.base_odometry().pose
        r = quat_to_matrix(pose.orientation)
        truth = (pose.position[0], pose.position[1], math.atan2(r[1, 0], r[0, 0]))
    err = lambda p: (math.hypot(p[0] - truth[0], p[1] - truth[1]), abs(p[2] - truth[2]))  # noqa: E731
    e_xy, e_yaw = err(exact.pose)
    assert e_xy < 0.01 and e_yaw < 0.01
    d_xy, d_yaw = err(drifting.pose)
    assert d_xy > e_xy + 0.005 or d_yaw > e_yaw + 0.01


def test_a_gyro_sees_a_turn_the_wheels_do_not():
    """A base that turns while its wheels stand still (it slides: the fetch robot under its arm's
    swing, docs/reference/mission.md) turns the gyro odometry's heading and not the wheels-only one."""
    wheels = WheelOdometry(R, TRACK, OdometryErrors.exact())
    gyro = WheelOdometry(R, TRACK, OdometryErrors.exact().with_(gyro=True, gyro_noise=0.0))
    for k in range(61):   # 1 s, wheels still, the true heading turns by 0.05 rad
        t = k * DT
        wheels.update(0.0, 0.0, t)
        gyro.update(0.0, 0.0, t, true_yaw=0.05 * t)
    assert wheels.yaw == 0.0
    assert gyro.yaw == pytest.approx(0.05, abs=1e-9)
    assert (gyro.x, gyro.y) == (0.0, 0.0)            # the distance still comes from the wheels
    gyro_drive = WheelOdometry(R, TRACK, OdometryErrors.exact().with_(gyro=True, gyro_noise=0.0))
    left = right = 0.0
    gyro_drive.update(left, right, 0.0, true_yaw=math.pi - 0.01)
    for k in range(1, 61):  # 1 s straight at 0.3 m/s while the true heading wraps past +-pi
        left += 0.3 / R * DT
        right += 0.3 / R * DT
        gyro_drive.update(left, right, k * DT, true_yaw=math.remainder(math.pi - 0.01 + 0.001 * k, 2 * math.pi))
    assert gyro_drive.yaw == pytest.approx(0.06, abs=1e-9)
    assert math.hypot(gyro_drive.x, gyro_drive.y) == pytest.approx(0.3, abs=1e-3)


def test_gyro_noise_is_a_random_walk_in_time_and_the_true_yaw_is_required():
    errors = OdometryErrors.exact().with_(gyro=True, gyro_noise=0.01)
    finals = []
    for seed in range(200):
        odo = WheelOdometry(R, TRACK, errors, seed=seed)
        for k in range(601):          # 10 s standing still, no true turn
            odo.update(0.0, 0.0, k * DT, true_yaw=0.0)
        finals.append(odo.yaw)
    std = float(np.std(finals))
    assert std == pytest.approx(0.01 * math.sqrt(10.0), rel=0.2)      # 0.0316 rad after 10 s
    assert math.sqrt(odo.cov[2, 2]) == pytest.approx(0.01 * math.sqrt(10.0), rel=1e-6)
    with pytest.raises(ValueError, match="true yaw"):
        WheelOdometry(R, TRACK, errors).update(0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="gyro_noise"):
        OdometryErrors(gyro_noise=-1.0)
