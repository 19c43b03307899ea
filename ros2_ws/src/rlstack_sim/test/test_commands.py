"""Unit tests of the bridge's command path (no ROS graph)."""

import math

import pytest

from rlstack_sim.commands import (
    CommandRejected,
    JointBounds,
    RejectLog,
    VelocityLimiter,
    Watchdog,
    clip_ee_delta,
    hold_targets,
    validate_joint_targets,
    validate_scalar,
    validate_twist,
)

BOUNDS = {"j1": JointBounds(-1.0, 1.0), "j2": JointBounds(0.0, 0.04)}


def kind_of(fn, *args):
    with pytest.raises(CommandRejected) as info:
        fn(*args)
    return info.value.kind


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_twist_rejects_non_finite_anywhere(bad):
    assert kind_of(validate_twist, bad, 0.0) == "non_finite"
    assert kind_of(validate_twist, 0.0, bad) == "non_finite"
    assert kind_of(validate_twist, 0.0, 0.0, (0.0, bad)) == "non_finite"
    assert validate_twist(0.2, -0.1, (5.0,)) == (0.2, -0.1)


def test_limiter_clips_speed_and_ramps_under_acceleration_limits():
    lim = VelocityLimiter(1.0, 2.0, 1.0, 4.0)
    assert lim.set_target(3.0, -5.0) is True
    assert lim.target == (1.0, -2.0)
    v, w = lim.update(0.1)
    assert (v, w) == pytest.approx((0.1, -0.4))
    for _ in range(20):
        lim.update(0.1)
    assert lim.current == (1.0, -2.0) and lim.settled
    assert lim.set_target(0.5, 0.0) is False
    lim.stop()
    assert lim.target == (0.0, 0.0) and not lim.settled
    steps = 0
    while not lim.settled:
        lim.update(0.1)
        steps += 1
    assert steps == 10 and lim.current == (0.0, 0.0)  # 1 m/s at 1 m/s^2 in 0.1 s steps


def test_limiter_without_accel_limit_jumps_and_rejects_bad_limits():
    lim = VelocityLimiter(1.0, 1.0, 0.0, 0.0)
    lim.set_target(0.7, 0.3)
    assert lim.update(0.01) == (0.7, 0.3)
    with pytest.raises(ValueError):
        VelocityLimiter(-1.0, 1.0, 1.0, 1.0)
    lim.reset()
    assert lim.current == lim.target == (0.0, 0.0)


def test_joint_targets_validation_kinds():
    assert validate_joint_targets(["j1", "j2"], [0.5, 0.02], BOUNDS) == (["j1", "j2"], [0.5, 0.02])
    assert kind_of(validate_joint_targets, [], [], BOUNDS) == "empty"
    assert kind_of(validate_joint_targets, ["j1", "j2"], [0.1], BOUNDS) == "wrong_length"
    assert kind_of(validate_joint_targets, ["j1", "j1"], [0.1, 0.2], BOUNDS) == "duplicate_joint"
    assert kind_of(validate_joint_targets, ["wheel"], [0.1], BOUNDS) == "unknown_joint"
    assert kind_of(validate_joint_targets, ["j1"], [math.nan], BOUNDS) == "non_finite"
    assert kind_of(validate_joint_targets, ["j1"], [1.5], BOUNDS) == "out_of_range"


def test_hold_targets_clips_into_limits_and_skips_uncontrolled():
    names, pos = hold_targets(["j1", "wheel", "j2"], [1.2, 3.0, 0.01], BOUNDS)
    assert names == ["j1", "j2"] and pos == [1.0, 0.01]


def test_ee_delta_clipped_to_max_step_and_nan_rejected():
    (dx, dy, dz), clipped = clip_ee_delta(0.3, 0.4, 0.0, 0.05)
    assert clipped and math.hypot(dx, dy) == pytest.approx(0.05) and dx / dy == pytest.approx(0.75)
    assert clip_ee_delta(0.01, 0.0, 0.0, 0.05) == ((0.01, 0.0, 0.0), False)
    assert kind_of(clip_ee_delta, 0.0, math.inf, 0.0, 0.05) == "non_finite"


def test_scalar_validation():
    assert validate_scalar(2.0, -5, 5, "f") == 2.0
    assert kind_of(validate_scalar, 6.0, -5, 5, "f") == "out_of_range"
    assert kind_of(validate_scalar, math.nan, -5, 5, "f") == "non_finite"


def test_watchdog_reports_each_stale_channel_once():
    wd = Watchdog(0.5, ["base", "arm"])
    assert wd.state("base") == "idle" and wd.deadline() is None
    assert wd.poll(100.0) == []  # idle channels never time out
    wd.feed("base", 1.0)
    wd.feed("arm", 1.2)
    assert wd.deadline() == pytest.approx(1.5)
    assert wd.poll(1.49) == []
    assert wd.poll(1.5) == ["base"] and wd.state("base") == "timed_out"
    assert wd.poll(1.6) == []
    assert wd.poll(1.7) == ["arm"]
    assert wd.timeouts == 2 and wd.deadline() is None
    wd.feed("base", 2.0)
    assert wd.state("base") == "active"
    wd.reset()
    assert wd.summary() == "base=idle, arm=idle"


def test_watchdog_zero_timeout_disables():
    wd = Watchdog(0.0, ["base"])
    wd.feed("base", 0.0)
    assert wd.poll(1e9) == [] and wd.deadline() is None


def test_reject_log_counts_all_and_throttles_per_kind():
    log = RejectLog(period_s=5.0)
    assert log.record("cmd_vel", "non_finite", 0.0) is True
    assert log.record("cmd_vel", "non_finite", 1.0) is False
    assert log.record("joint_targets", "wrong_length", 1.0) is True  # other kind: own throttle
    assert log.record("cmd_vel", "non_finite", 5.0) is True
    assert log.counts == {"cmd_vel/non_finite": 3, "joint_targets/wrong_length": 1}
    assert log.total == 4


def test_base_stall_monitor_reports_once_per_stall_and_resets_when_moving():
    from rlstack_sim.commands import BaseStallMonitor

    m = BaseStallMonitor(stall_s=3.0)
    assert not m.update((0.0, 0.0), (0.0, 0.0), 0.0)              # not commanded: never a stall
    assert not m.update((0.15, -0.55), (0.0, 0.0), 1.0)           # commanded, still: counting
    assert not m.update((0.15, -0.55), (0.0, 0.0), 3.5)
    assert m.update((0.15, -0.55), (0.001, 0.0), 4.0)             # 3 s: reported ...
    assert not m.update((0.15, -0.55), (0.0, 0.0), 9.0) and m.reported and m.stalls == 1   # ... once
    assert not m.update((0.15, -0.55), (0.14, -0.5), 10.0) and not m.reported              # moving: cleared
    assert not m.update((0.3, 0.0), (0.29, 0.0), 20.0)
    assert not m.update((0.0, 0.8), (0.0, 0.0), 21.0)             # a turn in place that does not turn
    assert m.update((0.0, 0.8), (0.0, 0.0), 24.5) and m.stalls == 2
