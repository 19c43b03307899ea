"""RosPorts.turn on a base that turns as commanded: turns of more than half a turn (a look around
sweeps 270 deg) are turned in full, not wrapped into the short way round."""

import math
import threading
import time
from types import SimpleNamespace

import pytest
import rclpy

from rlstack_mission.ros_ports import RosPorts


class _Base:
    """/odom of a base that integrates each /cmd_vel over one control period (the heading wraps at pi)."""

    def __init__(self, period):
        self.period, self.yaw, self.turned = period, 0.0, 0.0

    def publish(self, twist):
        w = twist.angular.z * self.period
        self.turned += w
        self.yaw = math.remainder(self.yaw + w, 2 * math.pi)


class _Host:
    """The mission node's members that a turn uses."""

    rate_hz, turn_speed, look_period_s = 200.0, 3.0, 1.0

    def __init__(self, base):
        self.cmd_pub, self.stopping, self._base = base, threading.Event(), base

    @property
    def odom(self):   # (x, y, z, yaw, time received), as the node holds /odom
        return (0.0, 0.0, 0.0, self._base.yaw, time.monotonic())


@pytest.fixture
def ports():
    owns = not rclpy.ok()   # the turn checks rclpy.ok(); another test of this process may hold the context
    if owns:
        rclpy.init()
    base = _Base(1.0 / _Host.rate_hz)
    yield RosPorts(_Host(base), SimpleNamespace(is_cancel_requested=False)), base
    if owns:
        rclpy.shutdown()


@pytest.mark.parametrize("angle", [0.5 * math.pi, -1.5 * math.pi, 1.5 * math.pi])
def test_a_turn_turns_the_whole_angle_the_way_asked(ports, angle):
    p, base = ports
    assert p.turn(angle).ok
    assert base.turned == pytest.approx(angle, abs=0.05)
