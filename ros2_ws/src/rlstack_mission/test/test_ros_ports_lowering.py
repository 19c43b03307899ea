"""RosPorts lowers a carried object on the drive's last stretch: while carrying to the drop-off, the
hand goes down towards ``place_point`` once the base is within ``lower_on_approach_m`` of its stand
pose, and not before (the put-down's descent overlaps the end of the drive)."""

import math
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from rlstack_mission.frames import TfTree
from rlstack_mission.mission_types import Pose2D
from rlstack_mission.ros_ports import RosPorts

CARRY = np.array([0.40, 0.0, 0.60])
PLACE = np.array([0.40, 0.0, -0.02])


class _Arm:
    """/arm/ee_delta of an arm that follows each step at once: the grasp point in base_link on /tf."""

    def __init__(self, tf):
        self.tf, self.ee, self.steps = tf, CARRY.copy(), 0
        self._show()

    def publish(self, delta):
        self.ee = self.ee + np.array([delta.x, delta.y, delta.z])
        self.steps += 1
        self._show()

    def _show(self):
        self.tf.set("base_link", "panda_grasptarget", self.ee, (0.0, 0.0, 0.0, 1.0))


class _Host:
    """The mission node's members that lowering uses; the base stands at ``x`` on the map's x axis."""

    rate_hz, map_frame, base_frame, ee_frame = 20.0, "map", "base_link", "panda_grasptarget"
    lower_on_approach_m, place_point, arm_max_step_carrying = 1.0, PLACE, 0.02

    def __init__(self):
        self.tf, self.stopping, self.x = TfTree(), threading.Event(), 0.0
        self.ee_pub = _Arm(self.tf)

    @property
    def odom(self):   # (x, y, z, yaw, time received), as the node holds /odom
        return (self.x, 0.0, 0.0, 0.0, time.monotonic())


@pytest.fixture
def ports():
    host = _Host()
    return RosPorts(host, SimpleNamespace(is_cancel_requested=False)), host


def test_the_hand_stays_up_until_the_base_is_near_its_stand_pose(ports):
    p, host = ports
    step = p._lowering_towards(Pose2D(3.0, 0.0, math.pi))
    host.x = 1.5   # 1.5 m from the stand pose: further than lower_on_approach_m
    for _ in range(50):
        step()
    assert host.ee_pub.steps == 0
    assert host.ee_pub.ee == pytest.approx(CARRY)


def test_near_the_stand_pose_the_hand_goes_down_to_the_place_point_at_the_carrying_step(ports):
    p, host = ports
    step = p._lowering_towards(Pose2D(3.0, 0.0, math.pi))
    host.x = 2.2   # 0.8 m to go
    heights = [host.ee_pub.ee[2]]
    for _ in range(200):
        step()
        heights.append(host.ee_pub.ee[2])
    assert np.linalg.norm(host.ee_pub.ee - PLACE) < 0.015
    assert np.max(np.abs(np.diff(heights))) <= 0.02 + 1e-9   # arm_max_step_carrying
    sent = host.ee_pub.steps
    step()
    assert host.ee_pub.steps == sent   # there: no more commands (the bridge holds the arm)


def test_lowering_is_off_at_zero(ports):
    p, host = ports
    host.lower_on_approach_m = 0.0
    assert p._lowering_towards(Pose2D(0.0, 0.0, 0.0)) is None
