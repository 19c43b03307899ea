"""Unit tests of the adapters' pure cores (no ROS)."""

import math

import pytest

from rlstack_adapters.core import ArmAdapterConfig, ArmAdapterCore, GripperConfig, GripperCore, TwistStamperCore


def speed(cmd):
    return math.sqrt(sum(v * v for v in cmd.linear))


def test_step_becomes_velocity_over_the_control_period():
    core = ArmAdapterCore(ArmAdapterConfig(step_period_s=0.05, max_linear_speed=1.0))
    cmd = core.on_ee_delta(0.01, -0.005, 0.0025, now=0.0)
    assert cmd.reason == "step"
    assert cmd.linear == pytest.approx((0.2, -0.1, 0.05))
    assert core.steps == 1 and core.clipped_steps == 0 and core.clipped_speeds == 0


def test_long_step_is_scaled_down_keeping_direction():
    core = ArmAdapterCore(ArmAdapterConfig(step_period_s=0.05, max_ee_step=0.01, max_linear_speed=10.0))
    cmd = core.on_ee_delta(0.03, 0.04, 0.0, now=0.0)  # 0.05 m long
    assert speed(cmd) == pytest.approx(0.01 / 0.05)
    assert cmd.linear[0] / cmd.linear[1] == pytest.approx(0.75)
    assert core.clipped_steps == 1


def test_speed_limit_clips_the_twist():
    core = ArmAdapterCore(ArmAdapterConfig(step_period_s=0.05, max_ee_step=0.05, max_linear_speed=0.1))
    cmd = core.on_ee_delta(0.0, 0.0, -0.015, now=0.0)  # 0.3 m/s asked
    assert cmd.linear == pytest.approx((0.0, 0.0, -0.1))
    assert core.clipped_speeds == 1


@pytest.mark.parametrize("bad", [(math.nan, 0.0, 0.0), (0.0, math.inf, 0.0), (0.0, 0.0, -math.inf)])
def test_non_finite_step_is_rejected_and_counted(bad):
    core = ArmAdapterCore()
    assert core.on_ee_delta(*bad, now=0.0) is None
    assert core.rejected == {"non_finite": 1}
    assert core.steps == 0


def test_watchdog_stops_the_arm_once_when_steps_stop():
    core = ArmAdapterCore(ArmAdapterConfig(command_timeout_s=0.15))
    core.on_ee_delta(0.01, 0.0, 0.0, now=1.0)
    assert core.on_tick(1.1) is None                 # within the timeout
    stop = core.on_tick(1.2)
    assert stop is not None and stop.reason == "timeout" and stop.linear == (0.0, 0.0, 0.0)
    assert core.on_tick(1.5) is None                 # once, not at every tick
    assert core.timeouts == 1


def test_watchdog_quiet_after_a_zero_step():
    core = ArmAdapterCore()
    core.on_ee_delta(0.0, 0.0, 0.0, now=0.0)         # the policy's safe action: zero
    assert core.on_tick(5.0) is None


def test_estop_stops_at_once_and_drops_steps_until_released():
    core = ArmAdapterCore()
    core.on_ee_delta(0.01, 0.0, 0.0, now=0.0)
    stop = core.set_estop(True)
    assert stop.reason == "estop" and stop.linear == (0.0, 0.0, 0.0)
    assert core.set_estop(True) is None              # asserted again: nothing new
    held = core.on_ee_delta(0.01, 0.0, 0.0, now=0.1)
    assert held.linear == (0.0, 0.0, 0.0) and held.reason == "estop"
    assert core.rejected == {"estop": 1}
    assert core.set_estop(False) is None
    assert core.on_ee_delta(0.01, 0.0, 0.0, now=0.2).linear == pytest.approx((0.2, 0.0, 0.0))


@pytest.mark.parametrize("field", ["step_period_s", "max_ee_step", "max_linear_speed", "command_timeout_s"])
@pytest.mark.parametrize("value", [0.0, -1.0, math.nan])
def test_arm_config_rejects_non_positive(field, value):
    with pytest.raises(ValueError, match=field):
        ArmAdapterConfig(**{field: value})


def test_gripper_goal_only_on_change_then_resent_after_the_period():
    core = GripperCore(GripperConfig(open_position=0.04, closed_position=0.0, max_effort=30.0, resend_period_s=1.0))
    first = core.on_command(True, now=0.0)
    assert first.open and first.position == 0.04 and first.max_effort == 0.0
    assert core.on_command(True, now=0.05) is None   # the policy re-publishes every step
    assert core.on_command(True, now=0.5) is None
    close = core.on_command(False, now=0.6)
    assert not close.open and close.position == 0.0 and close.max_effort == 30.0
    again = core.on_command(False, now=1.7)          # same state after resend_period_s
    assert again is not None and not again.open
    assert core.goals_sent == 3 and core.state == "closed"


def test_gripper_never_resends_with_zero_period():
    core = GripperCore(GripperConfig(resend_period_s=0.0))
    assert core.on_command(False, now=0.0) is not None
    assert core.on_command(False, now=1000.0) is None


def test_gripper_config_rejects_bad_values():
    with pytest.raises(ValueError):
        GripperConfig(max_effort=-1.0)
    with pytest.raises(ValueError):
        GripperConfig(open_position=math.nan)


def test_twist_stamper_passes_finite_only():
    core = TwistStamperCore()
    assert core.accept((0.2, 0.0, 0.0), (0.0, 0.0, 0.5))
    assert not core.accept((math.nan, 0.0, 0.0), (0.0, 0.0, 0.0))
    assert (core.forwarded, core.rejected) == (1, 1)


def test_gripper_yaw_turns_on_the_ticks_between_steps_then_stops_once():
    """/arm/ee_yaw: the mission turns the wrist while no steps come; the turn goes out as angular.z on
    the ticks at most max_angular_speed, adds up to the target, and ends with one zero twist."""
    core = ArmAdapterCore(ArmAdapterConfig(step_period_s=0.05, max_angular_speed=1.0))
    assert core.on_ee_yaw(0.3)
    turned, t = 0.0, 0.0
    core.on_tick(t)                                   # the first tick only starts the clock
    cmds = []
    for _ in range(40):
        t += 0.02
        cmd = core.on_tick(t)
        if cmd is not None:
            cmds.append(cmd)
            turned += cmd.angular_z * 0.02
    turns = [c for c in cmds if c.reason == "turn"]
    assert turns and all(0.0 < c.angular_z <= 1.0 for c in turns) and all(c.linear == (0.0, 0.0, 0.0) for c in turns)
    assert turned == pytest.approx(0.3, abs=1e-6) and core.yaw_commanded == pytest.approx(0.3)
    assert [c.reason for c in cmds][-1] == "turned" and cmds[-1].angular_z == 0.0
    assert sum(c.reason == "turned" for c in cmds) == 1 and core.timeouts == 0


def test_gripper_yaw_rides_on_steps_and_bad_yaws_are_refused():
    core = ArmAdapterCore(ArmAdapterConfig(step_period_s=0.05, max_angular_speed=1.0))
    assert core.on_ee_yaw(-0.1)
    first = core.on_ee_delta(0.0, 0.0, 0.001, now=0.0)
    assert first.angular_z == pytest.approx(-1.0)          # clipped to the rate: 0.05 rad per step
    second = core.on_ee_delta(0.0, 0.0, 0.001, now=0.05)
    assert second.angular_z == pytest.approx(-1.0)
    assert core.on_ee_delta(0.0, 0.0, 0.001, now=0.1).angular_z == 0.0   # there
    assert not core.on_ee_yaw(math.nan) and not core.on_ee_yaw(2.0)
    assert core.rejected == {"non_finite_yaw": 1, "yaw_out_of_range": 1}
    assert core.yaw_target == pytest.approx(-0.1)
