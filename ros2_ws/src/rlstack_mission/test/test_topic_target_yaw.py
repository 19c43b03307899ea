"""The wrist turn of the topic source (the ground-truth ablation): the yaw of the last /grasp_target about
base_link z, from a real PoseStamped through the mission's own TfTree (no ROS graph needed)."""

import math
from types import SimpleNamespace

import pytest
from geometry_msgs.msg import PoseStamped

from rlstack_mission.frames import TfTree
from rlstack_mission.ros_ports import RosPorts


def _pose(frame: str, yaw: float) -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x = 0.6
    msg.pose.orientation.z, msg.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return msg


class _Log:
    def __init__(self):
        self.warnings = []

    def warning(self, text):
        self.warnings.append(text)


@pytest.fixture
def ports():
    log = _Log()
    node = SimpleNamespace(rate_hz=20.0, topic_target=None, base_frame="base_link", tf=TfTree(),
                           get_logger=lambda: log)
    return RosPorts(node, goal_handle=None), node, log


def test_no_target_no_turn(ports):
    p, _node, _log = ports
    assert p._topic_target_yaw() is None


def test_yaw_in_base_link_as_published(ports):
    p, node, _log = ports
    node.topic_target = _pose("base_link", math.radians(41.0))
    assert math.degrees(p._topic_target_yaw()) == pytest.approx(41.0)
    node.topic_target = _pose("", math.radians(-20.0))   # no frame: base_link, as the policy reads it
    assert math.degrees(p._topic_target_yaw()) == pytest.approx(-20.0)


def test_yaw_from_another_frame_through_tf_or_none(ports):
    p, node, log = ports
    half = math.radians(15)
    node.tf.set("odom", "base_link", (1.0, 0.0, 0.0), (0.0, 0.0, math.sin(half), math.cos(half)))
    node.topic_target = _pose("odom", math.radians(45.0))
    assert math.degrees(p._topic_target_yaw()) == pytest.approx(15.0)
    node.topic_target = _pose("elsewhere", 0.3)
    assert p._topic_target_yaw() is None and "no wrist turn" in log.warnings[-1]
