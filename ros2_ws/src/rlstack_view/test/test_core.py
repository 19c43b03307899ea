"""The live view's pure cores: bind and token rules, command messages, images, label placement,
the 2-D transform tree, WebSocket framing, and the ros2msg schema text."""

import io
import json
import math
import struct
import zlib

import numpy as np
import pytest

from rlstack_view.core import (
    BadMessage,
    MapFrame,
    TfTree2D,
    check_bind,
    downscale,
    encode_png,
    image_to_rgb,
    is_loopback,
    label_box,
    occupancy_to_grey,
    parse_command,
    place_labels,
    token_ok,
)
from rlstack_view.foxglove_bridge import ros2msg_schema
from rlstack_view.server import FrameError, accept_key, encode_frame, read_message


def test_loopback_binds_need_no_token_and_others_need_one():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("robot.local")
    check_bind("127.0.0.1", "")
    with pytest.raises(ValueError, match="token"):
        check_bind("0.0.0.0", "")
    with pytest.raises(ValueError, match="16 characters"):
        check_bind("192.168.1.5", "short")
    check_bind("0.0.0.0", "x" * 16)
    assert token_ok(None, "") and token_ok("abc", "abc") and not token_ok("abd", "abc") and not token_ok(None, "abc")


def test_only_fetch_and_cancel_are_accepted():
    assert parse_command(b'{"op": "fetch", "query": "  the red   ball "}') == ("fetch", "the red ball")
    assert parse_command(b'{"op": "cancel"}') == ("cancel", None)
    cases = {b"not json": "malformed", b"[1, 2]": "malformed", b'{"op": "reset"}': "unknown_op",
             b'{"op": "fetch"}': "malformed", b'{"op": "fetch", "query": 5}': "malformed",
             b'{"op": "fetch", "query": "x", "dropoff": [1, 2]}': "malformed",
             b'{"op": "fetch", "query": "a\\u0000b"}': "malformed",
             json.dumps({"op": "fetch", "query": "a" * 300}).encode(): "oversized",
             b" " * 5000: "oversized", b"\xff\xfe": "malformed"}
    for raw, kind in cases.items():
        with pytest.raises(BadMessage) as info:
            parse_command(raw)
        assert info.value.kind == kind, raw[:40]


def _png_pixels(png: bytes, channels: int) -> np.ndarray:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", png[16:24])
    idat = png.index(b"IDAT")
    n = struct.unpack(">I", png[idat - 4:idat])[0]
    rows = np.frombuffer(zlib.decompress(png[idat + 4:idat + 4 + n]), dtype=np.uint8).reshape(h, 1 + w * channels)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, channels) if channels > 1 else rows[:, 1:]


def test_png_round_trip_and_downscale():
    rgb = np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    assert (_png_pixels(encode_png(rgb), 3) == rgb).all()
    small = downscale(rgb, 16)
    assert small.shape == (12, 16, 3)
    assert small[0, 0, 0] == rgb[:4, :4, 0].astype(int).sum() // 16
    assert downscale(rgb, 640).shape == rgb.shape
    with pytest.raises(ValueError):
        downscale(np.zeros((4, 4)), 2)


def test_image_encodings():
    bgr = np.zeros((2, 3, 3), dtype=np.uint8)
    bgr[..., 0] = 200   # blue in BGR
    out = image_to_rgb("bgr8", 2, 3, 9, bgr.tobytes())
    assert (out[..., 2] == 200).all() and (out[..., 0] == 0).all()
    padded = np.zeros((2, 10), dtype=np.uint8)   # step 10 > 3 * 3
    assert image_to_rgb("rgb8", 2, 3, 10, padded.tobytes()).shape == (2, 3, 3)
    for enc, step, data in (("32FC1", 12, b"\0" * 24), ("rgb8", 9, b"\0" * 10), ("rgb8", 2, b"\0" * 18)):
        with pytest.raises(ValueError):
            image_to_rgb(enc, 2, 3, step, data)


def test_occupancy_grid_is_drawn_north_up():
    grid = [0, 100, -1, 0]   # row 0 (south): free, occupied; row 1 (north): unknown, free
    grey = occupancy_to_grey(grid, 2, 2)
    assert grey.tolist() == [[160, 255], [255, 0]]
    with pytest.raises(ValueError):
        occupancy_to_grey([0, 0, 0], 2, 2)


def test_map_frame_pixels():
    f = MapFrame(origin_x=-5.0, origin_y=-2.0, resolution=0.05, width=200, height=80, scale=2.0)
    assert f.size_px == (400, 160)
    assert f.to_px(-5.0, -2.0) == pytest.approx((0.0, 160.0))
    assert f.to_px(5.0, 2.0) == pytest.approx((400.0, 0.0))


def _check_no_overlap(anchors, texts, places, bounds):
    boxes = [label_box(t, *p) for t, p in zip(texts, places) if p is not None]
    for i, a in enumerate(boxes):
        assert a[0] >= 0 and a[1] >= 0 and a[2] <= bounds[0] and a[3] <= bounds[1]
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
        for ax, ay in anchors:
            assert not (a[0] < ax + 4 and ax - 4 < a[2] and a[1] < ay + 4 and ay - 4 < a[3])


def test_labels_never_overlap_even_for_a_crowded_table():
    rng = np.random.default_rng(3)
    bounds = (640.0, 480.0)
    # twelve objects on one table (within 40 px), then a whole room of them
    for anchors in ([(300 + x, 200 + y) for x, y in rng.uniform(-20, 20, (12, 2))],
                    [tuple(p) for p in rng.uniform(0, 1, (40, 2)) * bounds]):
        texts = [f"{c} {k}" for c, k in zip(["red", "green", "blue", "yellow"] * 10, ["cube", "ball", "cylinder"] * 14)]
        texts = texts[:len(anchors)]
        places = place_labels(anchors, texts, bounds)
        _check_no_overlap(anchors, texts, places, bounds)
        assert sum(p is not None for p in places) >= len(anchors) * 0.75
    # a label keeps clear of the robot's marker
    robot = (95.0, 80.0, 125.0, 110.0)
    place = place_labels([(100, 100)], ["red ball"], bounds, keep_clear=[robot])[0]
    box = label_box("red ball", *place)
    assert not (box[0] < robot[2] and robot[0] < box[2] and box[1] < robot[3] and robot[1] < box[3])
    # two far-apart objects get labels right beside them
    places = place_labels([(100, 100), (500, 300)], ["red ball", "blue cube"], bounds)
    assert all(p is not None and abs(p[0] - a[0]) < 40 for p, a in zip(places, [(100, 100), (500, 300)]))


def test_tf_tree_composes_the_chain_to_the_map():
    tf = TfTree2D()
    tf.set("map", "odom", 1.0, 0.0, math.pi / 2)
    tf.set("odom", "base_link", 1.0, 0.0, 0.0)
    x, y, yaw = tf.lookup("map", "base_link")
    assert (x, y, yaw) == pytest.approx((1.0, 1.0, math.pi / 2))
    assert tf.lookup("map", "camera") is None
    tf.set("base_link", "base_link", 0, 0, 0)          # self loop: ignored
    tf.set("a", "b", float("nan"), 0, 0)               # not finite: ignored
    assert tf.lookup("a", "b") is None
    tf.set("b", "a", 0, 0, 0)
    tf.set("a", "b", 0, 0, 0)                           # a cycle: no answer, no hang
    assert tf.lookup("map", "a") is None


def _client_frame(payload: bytes, opcode: int = 1, fin: bool = True, mask: bool = True) -> bytes:
    key = b"\x01\x02\x03\x04"
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    m = 0x80 if mask else 0
    if n < 126:
        head += bytes([m | n])
    elif n < 65536:
        head += bytes([m | 126]) + struct.pack("!H", n)
    else:
        head += bytes([m | 127]) + struct.pack("!Q", n)
    if not mask:
        return head + payload
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def test_websocket_frames():
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="   # RFC 6455's example
    assert read_message(io.BytesIO(_client_frame(b'{"op":"cancel"}')), 4096) == (1, b'{"op":"cancel"}')
    two = _client_frame(b"ab", fin=False) + _client_frame(b"cd", opcode=0)
    assert read_message(io.BytesIO(two), 4096) == (1, b"abcd")
    for raw, kind in ((_client_frame(b"x" * 5000), "oversized"), (_client_frame(b"x", mask=False), "malformed"),
                      (_client_frame(b"x" * 3000, fin=False) + _client_frame(b"x" * 3000, opcode=0), "oversized"),
                      (_client_frame(b"x", opcode=0), "malformed")):
        with pytest.raises(FrameError) as info:
            read_message(io.BytesIO(raw), 4096)
        assert info.value.kind == kind
    with pytest.raises(EOFError):
        read_message(io.BytesIO(_client_frame(b"abc")[:-1]), 4096)
    assert encode_frame(b"x" * 200)[:4] == b"\x81\x7e\x00\xc8"


def test_ros2msg_schema_lists_every_nested_type(tmp_path):
    msgs = {("tf2_msgs", "TFMessage"): "geometry_msgs/TransformStamped[] transforms\n",
            ("geometry_msgs", "TransformStamped"): ("std_msgs/Header header\nstring child_frame_id\n"
                                                    "Transform transform\n"),
            ("geometry_msgs", "Transform"): "Vector3 translation\n# comment\nfloat64 w 1.0\n",
            ("geometry_msgs", "Vector3"): "float64 x\nfloat64 y\nfloat64 z\n",
            ("std_msgs", "Header"): "builtin_interfaces/Time stamp\nstring<=64 frame_id\n",
            ("builtin_interfaces", "Time"): "int32 sec\nuint32 nanosec\nuint8 MAX=3\n"}
    for (pkg, name), text in msgs.items():
        (tmp_path / pkg).mkdir(exist_ok=True)
        (tmp_path / pkg / f"{name}.msg").write_text(text)
    schema = ros2msg_schema("tf2_msgs/msg/TFMessage", lambda p, n: tmp_path / p / f"{n}.msg")
    assert schema.startswith("geometry_msgs/TransformStamped[] transforms\n")
    names = [line[5:] for line in schema.splitlines() if line.startswith("MSG: ")]
    assert sorted(names) == sorted(f"{p}/{n}" for p, n in msgs if n != "TFMessage")
    assert len(names) == len(set(names))


def test_tf_cdr_reader_matches_the_message_classes():
    from geometry_msgs.msg import TransformStamped
    from rclpy.serialization import serialize_message
    from tf2_msgs.msg import TFMessage

    from rlstack_view.core import parse_tf_cdr

    msg = TFMessage()
    for i, (parent, child) in enumerate([("odom", "base_link"), ("base_link", "arm_link_1"), ("map", "o")]):
        t = TransformStamped()
        t.header.frame_id, t.child_frame_id = parent, child
        t.header.stamp.sec, t.header.stamp.nanosec = 100 + i, 7
        t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = 1.5 + i, -2.25, 0.125
        t.transform.rotation.z, t.transform.rotation.w = math.sin(0.3 * i), math.cos(0.3 * i)
        msg.transforms.append(t)
    raw = serialize_message(msg)
    got = parse_tf_cdr(raw)
    assert [(p, c) for p, c, *_ in got] == [("odom", "base_link"), ("base_link", "arm_link_1"), ("map", "o")]
    for i, (_p, _c, x, y, z, qx, qy, qz, qw) in enumerate(got):
        assert (x, y, z, qx, qy) == (1.5 + i, -2.25, 0.125, 0.0, 0.0)
        assert (qz, qw) == pytest.approx((math.sin(0.3 * i), math.cos(0.3 * i)))
    assert parse_tf_cdr(serialize_message(TFMessage())) == []
    for bad in (b"", b"\x00\x01\x00\x00\xff\xff\xff\xff", raw[:-9], b"\x07" * 40):
        with pytest.raises(ValueError):
            parse_tf_cdr(bad)
