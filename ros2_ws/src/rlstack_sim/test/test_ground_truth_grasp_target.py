"""The ground-truth ablation's simulator-side grasp target (rlstack_sim.ground_truth_grasp_target):
the pure matching and frame change, then the node as a real process on a private domain answering a
grasp request the way the mission makes one."""

import math

import numpy as np
import pytest
from geometry_msgs.msg import PointStamped, PoseStamped
from nav_msgs.msg import Odometry
from visualization_msgs.msg import Marker, MarkerArray

from rlstack_common.qos import LATCHED
from rlstack_sim.ground_truth_grasp_target import in_base_frame, nearest_object


def _yaw_quat(yaw):
    return np.array([0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)])


OBJECTS = {"red_cube": (np.array([1.0, 2.0, 0.45]), _yaw_quat(0.3)),
           "blue_ball": (np.array([1.2, 2.0, 0.45]), _yaw_quat(0.0)),
           "green_cylinder": (np.array([-2.0, 0.5, 0.02]), _yaw_quat(0.0))}


def test_the_nearest_object_within_the_radius_is_the_target():
    assert nearest_object(OBJECTS, (1.04, 2.01, 0.44), 0.3) == "red_cube"
    assert nearest_object(OBJECTS, (1.17, 2.0, 0.45), 0.3) == "blue_ball"
    # a false detection: nothing there
    assert nearest_object(OBJECTS, (0.0, 0.0, 0.0), 0.3) is None
    assert nearest_object({}, (1.0, 2.0, 0.45), 0.3) is None


def test_the_target_is_expressed_in_the_base_frame():
    base = (np.array([1.0, 1.0, 0.0]), _yaw_quat(math.pi / 2))   # at (1, 1), facing +y
    pos, quat = in_base_frame(base, OBJECTS["red_cube"])
    # the cube is 1 m ahead (world +y = base +x), 0.45 m up; its yaw 0.3 rad is -1.27 rad from the base's
    assert pos == pytest.approx([1.0, 0.0, 0.45], abs=1e-9)
    assert math.remainder(2 * math.atan2(quat[2], quat[3]) - (0.3 - math.pi / 2),
                          2 * math.pi) == pytest.approx(0.0, abs=1e-9)
    # a quaternion that is not one is refused, not turned into garbage
    with pytest.raises(ValueError, match="not a rotation"):
        in_base_frame((np.zeros(3), np.zeros(4)), OBJECTS["red_cube"])


def _markers():
    out = MarkerArray()
    for name, (p, q) in OBJECTS.items():
        m = Marker(ns=name)
        m.header.frame_id = "map"
        m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in p)
        m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w = (float(v) for v in q)
        out.markers.append(m)
    return out


def _request(x=0.0, y=0.0, z=0.0, frame="map"):
    msg = PointStamped()
    msg.header.frame_id = frame
    msg.point.x, msg.point.y, msg.point.z = x, y, z
    return msg


def test_the_node_answers_a_grasp_request_with_the_true_pose_and_stops_when_it_ends(ros_processes, ros_probe):
    ros_processes.start_node("rlstack_sim", "ground_truth_grasp_target", params={"rate_hz": 40.0})
    targets = ros_probe.subscribe("/grasp_target", PoseStamped)
    ros_probe.wait_for_subscribers("/sim_ground_truth/markers")
    markers = ros_probe.publisher("/sim_ground_truth/markers", MarkerArray)
    odom = ros_probe.publisher("/sim_ground_truth/odom", Odometry)
    request = ros_probe.publisher("/fetch/grasp_request", PointStamped, qos=LATCHED)
    base = Odometry()
    base.header.frame_id = "map"
    base.pose.pose.position.x = base.pose.pose.position.y = 1.0
    base.pose.pose.orientation.z, base.pose.pose.orientation.w = math.sin(math.pi / 4), math.cos(math.pi / 4)
    markers.publish(_markers())
    odom.publish(base)

    # nothing is asked: nothing is published
    ros_probe.spin_for(0.3)
    assert len(targets) == 0
    # the mission's perceived red cube, 4 cm off: the true cube, in base_link
    request.publish(_request(1.04, 2.01, 0.44))
    got = ros_probe.wait_for_messages(targets, 3)[-1]
    assert got.header.frame_id == "base_link"
    assert (got.pose.position.x, got.pose.position.y, got.pose.position.z) == pytest.approx((1.0, 0.0, 0.45), abs=1e-6)
    # the request ends (an empty frame_id): the target stops
    request.publish(_request(frame=""))
    ros_probe.spin_for(0.3)
    n = len(targets)
    ros_probe.spin_for(0.3)
    assert len(targets) == n
    # a false detection (nothing within the radius): no target at all
    request.publish(_request(0.0, 0.0, 0.0))
    ros_probe.spin_for(0.5)
    assert len(targets) == n
    # a non-finite request is refused, and the node lives on
    request.publish(_request(math.nan, 2.0, 0.45))
    ros_probe.spin_for(0.3)
    assert len(targets) == n
    request.publish(_request(1.2, 2.0, 0.45))
    got = ros_probe.wait_for_messages(targets, n + 1)[-1]
    assert got.pose.position.x == pytest.approx(1.0, abs=1e-6) and got.pose.position.y == pytest.approx(-0.2, abs=1e-6)
    ros_processes.assert_all_alive()
