"""The hostile-message generator: every kind is what it says, and differs from the good message."""

from __future__ import annotations

import math

import numpy as np
from geometry_msgs.msg import PoseWithCovarianceStamped
from nav_msgs.msg import OccupancyGrid, Odometry
from sensor_msgs.msg import CameraInfo, Image, JointState
from tf2_msgs.msg import TFMessage

from rlstack_testing.hostile import UNKNOWN_FRAME, hostile_messages, map_fields, plausible

TYPES = (Image, CameraInfo, TFMessage, Odometry, OccupancyGrid, JointState, PoseWithCovarianceStamped)


def _floats(msg):
    out = []

    def fn(_path, type_str, value):
        if type_str in ("double", "float"):
            out.append(value)
        elif type_str.startswith(("double[", "sequence<double")):
            out.extend(list(value))
        return ...
    map_fields(msg, fn)
    return out


def test_every_case_differs_from_the_plausible_message():
    for cls in TYPES:
        base = plausible(cls, now=1000.0)
        cases = hostile_messages(cls, now=1000.0)
        assert len(cases) >= 8, cls
        for kind, msg in cases:
            assert isinstance(msg, cls)
            assert msg != base, (cls.__name__, kind)


def test_plausible_images_and_camera_infos_are_well_formed():
    img = plausible(Image, now=5.0)
    assert len(img.data) == img.height * img.step == img.height * img.width * 4
    assert np.all(np.frombuffer(bytes(img.data), dtype=np.float32) == 1.5)
    info = plausible(CameraInfo, now=5.0)
    assert info.k[0] > 0 and info.k[4] > 0 and (img.width, img.height) == (info.width, info.height)
    assert img.header.stamp.sec == 5


def test_generic_kinds_do_what_they_say():
    cases = dict(hostile_messages(Odometry, now=1000.0))
    assert all(math.isnan(v) for v in _floats(cases["nan"]))
    assert all(math.isinf(v) for v in _floats(cases["inf"]))
    assert cases["unknown_frame"].header.frame_id == UNKNOWN_FRAME == cases["unknown_frame"].child_frame_id
    assert cases["empty_frame"].header.frame_id == ""
    assert cases["stamp_past"].header.stamp.sec == 1000 - 3600
    assert cases["stamp_future"].header.stamp.sec == 1000 + 1_000_000
    assert cases["zero_quaternion"].pose.pose.orientation.w == 0.0
    joints = dict(hostile_messages(JointState, now=1.0))
    assert len(joints["joint_length_mismatch"].position) != len(joints["joint_length_mismatch"].name)
    assert len(joints["long_sequences"].position) == 10_000


def test_image_malformations():
    cases = dict(hostile_messages(Image, now=1.0))
    short = cases["image_short_data"]
    assert len(short.data) < short.height * short.step
    huge = cases["image_claims_huge"]
    assert huge.height * huge.step > 1e9 and len(huge.data) < 1e4   # claims gigabytes, carries kilobytes
    assert cases["image_bad_encoding"].encoding == "yuv_weird"
    nan = np.frombuffer(bytes(cases["image_nan_depth"].data), dtype=np.float32)
    assert np.isnan(nan).all()
    large = cases["image_large_rgb"]
    assert len(large.data) == large.height * large.step < 4 * 1024 * 1024   # under the middleware's 4 MiB


def test_transform_malformations():
    cases = dict(hostile_messages(TFMessage, now=1.0))
    assert cases["empty_sequences"].transforms == []
    assert cases["tf_zero_quaternion"].transforms[0].transform.rotation.w == 0.0
    loop = cases["tf_self_parent"].transforms[0]
    assert loop.header.frame_id == loop.child_frame_id
    a, b = cases["tf_cycle"].transforms
    assert (a.header.frame_id, a.child_frame_id) == (b.child_frame_id, b.header.frame_id)
