"""Unit tests of backend data -> ROS message conversion (no ROS graph)."""

import math

import numpy as np
import pytest

from rlstack_sim import convert
from sim_bridges.contract import CameraFrame, CameraIntrinsics, JointState, ObjectState, Odometry, Pose, Twist
from sim_bridges.geometry import OPTICAL_FROM_BODY, look_at_optical, quat_from_rpy, quat_to_matrix


def test_time_msg_rounds_to_nanoseconds():
    t = convert.time_msg(70 / 60)
    assert (t.sec, t.nanosec) == (1, 166_666_667)
    assert convert.time_msg(0.0).sec == 0 and convert.time_msg(2.5).nanosec == 500_000_000


def test_joint_state_and_odometry():
    js = JointState(("a", "b"), [0.1, 0.2], [1.0, 2.0], [0.0, 3.0])
    stamp = convert.time_msg(1.0)
    msg = convert.joint_state_msg(js, stamp)
    assert list(msg.name) == ["a", "b"] and list(msg.position) == [0.1, 0.2] and list(msg.effort) == [0.0, 3.0]
    odom = Odometry(1.0, Pose([1, 2, 0.08], quat_from_rpy(0, 0, 0.3)), Twist([0.5, 0, 0], [0, 0, 0.2]))
    o = convert.odometry_msg(odom, stamp)
    assert (o.header.frame_id, o.child_frame_id) == ("odom", "base_link")
    assert o.pose.pose.position.y == 2.0 and o.twist.twist.linear.x == 0.5 and o.twist.twist.angular.z == 0.2
    tf = convert.odom_transform(odom, stamp)
    assert tf.header.frame_id == "odom" and tf.child_frame_id == "base_link"
    assert tf.transform.rotation.z == pytest.approx(math.sin(0.15))


def _frame():
    intr = CameraIntrinsics(4, 3, 100.0, 100.0, 2.0, 0.5)
    rgb = np.arange(36, dtype=np.uint8).reshape(3, 4, 3)
    depth = np.full((3, 4), 2.5, dtype=np.float32)
    depth[0, 0] = np.nan
    return CameraFrame("cam", 1.5, rgb, depth, intr, Pose([0, 0, 1]), "cam_optical_frame")


def test_images_and_camera_info():
    frame = _frame()
    stamp = convert.time_msg(frame.stamp)
    rgb = convert.rgb_msg(frame, stamp)
    assert (rgb.encoding, rgb.width, rgb.height, rgb.step, rgb.is_bigendian) == ("rgb8", 4, 3, 12, 0)
    assert bytes(rgb.data) == frame.rgb.tobytes() and rgb.header.frame_id == "cam_optical_frame"
    depth = convert.depth_msg(frame, stamp)
    assert (depth.encoding, depth.step) == ("32FC1", 16)
    back = np.frombuffer(bytes(depth.data), dtype="<f4").reshape(3, 4)
    assert math.isnan(back[0, 0]) and back[2, 3] == 2.5
    info = convert.camera_info_msg(frame.intrinsics, frame.frame_id, stamp)
    assert list(info.k) == [100.0, 0.0, 2.0, 0.0, 100.0, 0.5, 0.0, 0.0, 1.0]
    assert info.p[2] == 2.0 and info.p[10] == 1.0 and (info.width, info.height) == (4, 3)
    assert info.distortion_model == "plumb_bob" and list(info.d) == [0.0] * 5


def _matrix(tf):
    r = tf.transform.rotation
    t = tf.transform.translation
    m = np.eye(4)
    m[:3, :3] = quat_to_matrix([r.x, r.y, r.z, r.w])
    m[:3, 3] = [t.x, t.y, t.z]
    return m


def test_camera_static_transforms_compose_to_the_optical_pose():
    optical = look_at_optical([1.0, 2.0, 1.5], [3.0, 2.5, 0.0])
    base = Pose([1.2, 1.8, 0.08], quat_from_rpy(0, 0, 0.7))
    stamp = convert.time_msg(0.0)
    to_link, to_optical = convert.camera_static_transforms("cam", optical, "base_link", base, stamp)
    assert (to_link.header.frame_id, to_link.child_frame_id) == ("base_link", "cam_link")
    assert (to_optical.header.frame_id, to_optical.child_frame_id) == ("cam_link", "cam_optical_frame")
    world_base = np.eye(4)
    world_base[:3, :3] = quat_to_matrix(base.orientation)
    world_base[:3, 3] = base.position
    composed = world_base @ _matrix(to_link) @ _matrix(to_optical)
    assert composed[:3, 3] == pytest.approx(optical.position)
    assert composed[:3, :3] == pytest.approx(quat_to_matrix(optical.orientation))
    # the camera link is a REP 103 body frame: its x axis is the optical z axis (looking direction)
    link_world = world_base @ _matrix(to_link)
    assert link_world[:3, 0] == pytest.approx(quat_to_matrix(optical.orientation)[:, 2])
    assert to_optical.transform.rotation.w == pytest.approx(OPTICAL_FROM_BODY[3])


def test_ground_truth_messages_share_order_and_names():
    objs = {
        name: ObjectState(name, Pose([i, 0, 0.5]), Twist([0, 0, 0], [0, 0, 0]), shape, "red", (0.05, 0.05, 0.05))
        for i, (name, shape) in enumerate([("z_ball", "sphere"), ("a_cube", "box"), ("m_can", "cylinder")])
    }
    poses, markers = convert.ground_truth_msgs(objs, "odom", convert.time_msg(1.0), {"red": (1.0, 0.0, 0.0, 1.0)})
    assert [m.ns for m in markers.markers] == ["a_cube", "m_can", "z_ball"]
    assert [p.position.x for p in poses.poses] == [1.0, 2.0, 0.0]
    assert [m.type for m in markers.markers] == [1, 3, 2]  # CUBE, CYLINDER, SPHERE
    assert poses.header.frame_id == markers.markers[0].header.frame_id == "odom"
    assert markers.markers[0].color.r == 1.0 and markers.markers[0].scale.z == 0.05
