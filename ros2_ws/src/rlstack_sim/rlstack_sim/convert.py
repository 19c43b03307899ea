"""Backend data -> ROS messages, and frame math for the static transforms.

Imports message packages only (no rclpy), so it is unit-tested without a ROS graph.
Stamps are always *sim* time in seconds, converted with :func:`time_msg`.
"""

from __future__ import annotations

import array
from typing import List, Mapping, Optional, Sequence, Tuple

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose as PoseMsg
from geometry_msgs.msg import PoseArray, TransformStamped
from nav_msgs.msg import Odometry as OdometryMsg
from sensor_msgs.msg import CameraInfo, Image
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from sim_bridges.contract import CameraFrame, CameraIntrinsics, JointState, ObjectState, Odometry, Pose
from sim_bridges.geometry import OPTICAL_FROM_BODY, matrix_to_quat, quat_to_matrix

__all__ = [
    "camera_info_msg",
    "camera_static_transforms",
    "depth_msg",
    "ground_truth_msgs",
    "joint_state_msg",
    "odometry_msg",
    "odom_transform",
    "relative_pose",
    "rgb_msg",
    "time_msg",
    "transform_msg",
]


def time_msg(seconds: float) -> Time:
    """Sim time (s, >= 0) as builtin_interfaces/Time, rounded to the nanosecond."""
    ns = int(round(seconds * 1e9))
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def _header(stamp: Time, frame_id: str) -> Header:
    return Header(stamp=stamp, frame_id=frame_id)


def joint_state_msg(js: JointState, stamp: Time) -> JointStateMsg:
    return JointStateMsg(header=_header(stamp, ""), name=list(js.names), position=js.position.tolist(),
                         velocity=js.velocity.tolist(), effort=js.effort.tolist())


def _fill_pose(msg: PoseMsg, position: Sequence[float], orientation: Sequence[float]) -> PoseMsg:
    msg.position.x, msg.position.y, msg.position.z = (float(v) for v in position)
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = (float(v) for v in orientation)
    return msg


def odometry_msg(odom: Odometry, stamp: Time, pose_covariance=None) -> OdometryMsg:
    """``pose_covariance``: 6x6 (x, y, z, roll, pitch, yaw) or None (all zero: exact odometry)."""
    msg = OdometryMsg(header=_header(stamp, odom.frame_id), child_frame_id=odom.child_frame_id)
    _fill_pose(msg.pose.pose, odom.pose.position, odom.pose.orientation)
    if pose_covariance is not None:
        msg.pose.covariance = [float(v) for v in np.asarray(pose_covariance, float).ravel()]
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z = (float(v) for v in odom.twist.linear)
    t.angular.x, t.angular.y, t.angular.z = (float(v) for v in odom.twist.angular)
    return msg


def transform_msg(parent: str, child: str, position: Sequence[float], orientation: Sequence[float],
                  stamp: Time) -> TransformStamped:
    msg = TransformStamped(header=_header(stamp, parent), child_frame_id=child)
    tr = msg.transform
    tr.translation.x, tr.translation.y, tr.translation.z = (float(v) for v in position)
    tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w = (float(v) for v in orientation)
    return msg


def odom_transform(odom: Odometry, stamp: Time) -> TransformStamped:
    return transform_msg(odom.frame_id, odom.child_frame_id, odom.pose.position, odom.pose.orientation, stamp)


def relative_pose(parent: Pose, child: Pose) -> Tuple[np.ndarray, np.ndarray]:
    """Pose of ``child`` in ``parent`` (both given in the same frame): ``parent^-1 * child``."""
    rp = quat_to_matrix(parent.orientation)
    rc = quat_to_matrix(child.orientation)
    pos = rp.T @ (np.asarray(child.position) - np.asarray(parent.position))
    return pos, matrix_to_quat(rp.T @ rc)


def camera_static_transforms(camera: str, optical_pose: Pose, parent: str, parent_pose: Optional[Pose],
                             stamp: Time) -> list:
    """``parent -> <camera>_link -> <camera>_optical_frame`` for a camera rigidly fixed to ``parent``.

    ``optical_pose`` and ``parent_pose`` are in the same (world) frame; ``parent_pose=None``
    means the parent is the world itself. ``<camera>_link`` is the REP 103 body frame
    (x forward), rotated from the optical frame by the usual ``rpy(-pi/2, 0, -pi/2)``.
    """
    r_opt = quat_to_matrix(optical_pose.orientation)
    r_body = r_opt @ quat_to_matrix(OPTICAL_FROM_BODY).T  # R_world_body = R_world_opt * R_opt_body
    body = Pose(optical_pose.position, matrix_to_quat(r_body))
    if parent_pose is None:
        pos, orn = np.asarray(body.position), np.asarray(body.orientation)
    else:
        pos, orn = relative_pose(parent_pose, body)
    link, optical = f"{camera}_link", f"{camera}_optical_frame"
    return [
        transform_msg(parent, link, pos, orn, stamp),
        transform_msg(link, optical, (0.0, 0.0, 0.0), OPTICAL_FROM_BODY, stamp),
    ]


def camera_info_msg(intr: CameraIntrinsics, frame_id: str, stamp: Time) -> CameraInfo:
    """Ideal pinhole CameraInfo (no distortion; P = [K | 0] for a monocular camera)."""
    fx, fy, cx, cy = float(intr.fx), float(intr.fy), float(intr.cx), float(intr.cy)
    return CameraInfo(
        header=_header(stamp, frame_id), width=int(intr.width), height=int(intr.height),
        distortion_model="plumb_bob", d=[0.0] * 5,
        k=[fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0],
        r=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p=[fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0],
    )


def _image(arr: np.ndarray, encoding: str, bytes_per_pixel: int, frame_id: str, stamp: Time) -> Image:
    h, w = arr.shape[:2]
    msg = Image(header=_header(stamp, frame_id), height=h, width=w, encoding=encoding,
                is_bigendian=0, step=w * bytes_per_pixel)
    # array.array from a buffer is a memcpy; assigning a list/bytes would check every byte
    msg.data = array.array("B", np.ascontiguousarray(arr).tobytes())
    return msg


def rgb_msg(frame: CameraFrame, stamp: Time) -> Image:
    return _image(frame.rgb, "rgb8", 3, frame.frame_id, stamp)


def depth_msg(frame: CameraFrame, stamp: Time) -> Image:
    """32FC1 depth in metres along the optical axis, NaN = no return (REP 118)."""
    depth = np.asarray(frame.depth, dtype="<f4")  # little-endian, is_bigendian = 0
    return _image(depth, "32FC1", 4, frame.frame_id, stamp)


_MARKER_TYPES = {"box": Marker.CUBE, "sphere": Marker.SPHERE, "cylinder": Marker.CYLINDER}


def object_poses(objects: Mapping[str, ObjectState]) -> Tuple[List[str], List[PoseMsg]]:
    """(names, poses) of the objects sorted by name: the order of :func:`ground_truth_msgs`."""
    names = sorted(objects)
    return names, [_fill_pose(PoseMsg(), objects[n].pose.position, objects[n].pose.orientation) for n in names]


def ground_truth_msgs(objects: Mapping[str, ObjectState], frame_id: str, stamp: Time,
                      colors: Mapping[str, Sequence[float]]) -> Tuple[PoseArray, MarkerArray]:
    """PoseArray and MarkerArray of the objects, both sorted by name (same order).

    Each marker carries the object name in ``ns`` and ``text``, its shape as the marker
    type (unknown shapes: CUBE), its full extents as ``scale`` and its colour.
    """
    header = _header(stamp, frame_id)
    poses = PoseArray(header=header)
    markers = MarkerArray()
    for i, name in enumerate(sorted(objects)):
        obj = objects[name]
        pose = _fill_pose(PoseMsg(), obj.pose.position, obj.pose.orientation)
        poses.poses.append(pose)
        m = Marker(header=header, ns=name, id=i, type=_MARKER_TYPES.get(obj.shape, Marker.CUBE),
                   action=Marker.ADD, pose=pose, text=name, frame_locked=False)
        m.scale.x, m.scale.y, m.scale.z = (float(v) for v in obj.size)
        r, g, b, a = colors.get(obj.color_name, (0.5, 0.5, 0.5, 1.0))
        m.color = ColorRGBA(r=float(r), g=float(g), b=float(b), a=float(a))
        markers.markers.append(m)
    return poses, markers
