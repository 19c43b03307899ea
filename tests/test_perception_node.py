"""semantic_map (rlstack_perception) as a real process: against the sim bridge, bad input, save/load.

Every test starts its own processes on its own ROS domain and waits by discovery or messages.
"""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import TransformStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

from rlstack_interfaces.msg import SemanticMap
from rlstack_interfaces.srv import QueryObjects

STATIC_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
IMAGE_QOS = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
CAM = "test_camera_optical_frame"


def yaw(q) -> float:
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def start_map(ros_processes, params_dir, **params):
    node = ros_processes.start_node("rlstack_perception", "semantic_map", params_file=params_dir / "semantic_map.yaml",
                                    params=params)
    node.wait_for_output("ready:", timeout=90)
    return node


def query(probe, text, n=1):
    return probe.call(QueryObjects, "/semantic_map/query", QueryObjects.Request(text=text, max_results=n), timeout=30)


def diag(probe, queue, predicate, timeout=20.0):
    found = {}

    def check():
        for msg in queue.pop_all():
            for st in msg.status:
                if st.name.startswith("semantic_map"):
                    values = {kv.key: kv.value for kv in st.values}
                    if predicate(values):
                        found.update(values)
        return bool(found)

    probe.spin_until(check, timeout, "semantic_map diagnostics")
    return found


# ---------------------------------------------------------------------------- with the bridge
def test_robot_looks_around_and_finds_the_yellow_cube(ros_processes, ros_probe, params_dir):
    from sim_bridges import make_backend

    seed = 7
    with make_backend("pybullet") as sim:
        sim.load_scene("home")
        sim.reset(seed=seed)
        truth = {k: np.asarray(v.pose.position) for k, v in sim.ground_truth().items()}
    ros_processes.start_node("rlstack_sim", "sim_bridge", params_file=params_dir / "sim_bridge.yaml",
                             params={"scene": "home", "seed": seed, "mode": "realtime", "camera_rate_hz": 10.0,
                                     "command_timeout_s": 1.0})
    node = start_map(ros_processes, params_dir)
    map_q = ros_probe.subscribe("semantic_map", SemanticMap)
    marker_q = ros_probe.subscribe("semantic_map/markers", MarkerArray)
    odom_q = ros_probe.subscribe("/odom", Odometry)
    ros_probe.wait_for_messages(map_q, 1, timeout=60)  # frames flow through the node

    # look around: turn left to face +y, then drive ~0.8 m towards the far wall
    pub = ros_probe.publisher("/cmd_vel", Twist)
    cmd = Twist()
    state = {"phase": "turn"}

    def control():
        msgs = odom_q.pop_all()
        if msgs:
            state["odom"] = msgs[-1]
        o = state.get("odom")
        cmd.linear.x, cmd.angular.z = 0.0, 0.0
        if o is not None and state["phase"] == "turn":
            if yaw(o.pose.pose.orientation) < math.pi / 2 - 0.05:
                cmd.angular.z = 0.6
            else:
                state["phase"] = "drive"
        if o is not None and state["phase"] == "drive":
            if o.pose.pose.position.y < 0.8:
                cmd.linear.x = 0.3
            else:
                state["phase"] = "done"
        pub.publish(cmd)

    timer = ros_probe.node.create_timer(0.05, control)
    ros_probe.spin_until(lambda: state["phase"] == "done", 60, "the robot to turn and drive")
    goal = truth["yellow_cube"]
    seen = {}

    def found():
        reply = query(ros_probe, "the yellow cube")
        if reply.success and reply.matches:
            p = reply.matches[0].object.position
            seen["reply"] = reply
            return np.linalg.norm(np.array([p.x, p.y, p.z]) - goal) < 0.05
        return False

    deadline = time.monotonic() + 40
    while not found() and time.monotonic() < deadline:
        ros_probe.spin_for(1.0)
    ros_probe.node.destroy_timer(timer)
    reply = seen.get("reply")
    assert reply is not None and reply.matches, "no answer"
    best = reply.matches[0]
    p = best.object.position
    assert np.linalg.norm(np.array([p.x, p.y, p.z]) - goal) < 0.05, (best, goal)
    assert best.object.label == "yellow cube" and best.object.observations >= 2 and reply.header.frame_id == "odom"
    # other wordings find the same entry
    for text in ("the yellow block", "a yellow cube"):
        assert query(ros_probe, text).matches[0].object.id == best.object.id
    m = map_q.messages[-1]
    assert m.header.frame_id == "odom" and len(m.objects) >= 1
    assert marker_q.messages and any(mk.text.startswith("yellow cube") for mk in marker_q.messages[-1].markers)
    assert node.alive()


# ---------------------------------------------------------------------------- synthetic frames
def _image_msgs(frame, stamp, frame_id=CAM, depth=None, rgb_shape=None):
    rgb = Image(encoding="rgb8", height=frame.height, width=frame.width, step=frame.width * 3,
                data=np.ascontiguousarray(frame.rgb).tobytes())
    d = np.ascontiguousarray(frame.depth if depth is None else depth, dtype="<f4")
    dep = Image(encoding="32FC1", height=d.shape[0], width=d.shape[1], step=d.shape[1] * 4, data=d.tobytes())
    for m in (rgb, dep):
        m.header.stamp = stamp
        m.header.frame_id = frame_id
    return rgb, dep


def _info(frame, stamp, width=None, height=None):
    info = CameraInfo(width=width or frame.width, height=height or frame.height)
    info.k = [frame.fx, 0.0, frame.cx, 0.0, frame.fy, frame.cy, 0.0, 0.0, 1.0]
    info.header.stamp = stamp
    info.header.frame_id = CAM
    return info


def _static_tf(frame):
    r = frame.rotation
    # rotation matrix -> quaternion (x, y, z, w); r is a proper rotation from look-at
    w = math.sqrt(max(0.0, 1 + r[0, 0] + r[1, 1] + r[2, 2])) / 2
    x = math.copysign(math.sqrt(max(0.0, 1 + r[0, 0] - r[1, 1] - r[2, 2])) / 2, r[2, 1] - r[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1 - r[0, 0] + r[1, 1] - r[2, 2])) / 2, r[0, 2] - r[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1 - r[0, 0] - r[1, 1] + r[2, 2])) / 2, r[1, 0] - r[0, 1])
    t = TransformStamped()
    t.header.frame_id = "odom"
    t.child_frame_id = CAM
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = (float(v) for v in
                                                                                        frame.translation)
    t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z, t.transform.rotation.w = x, y, z, w
    return TFMessage(transforms=[t])


@pytest.fixture(scope="module")
def table_view():
    """A PyBullet view of the panda_table cubes and their true positions (rendered in-process)."""
    from rlstack_perception import simtools as st
    from sim_bridges import make_backend

    with make_backend("pybullet") as sim:
        sim.load_scene("panda_table")
        sim.reset(seed=4)
        objs = st.target_objects(sim)
        centre = np.mean([o.pose.position for o in objs.values()], axis=0)
        frame = st.render_view(sim, centre + np.array([0.7, 0.2, 0.5]), centre)
        truth = {st.label_of(o): np.asarray(o.pose.position) for o in objs.values()}
    return frame, truth


def test_bad_inputs_are_skipped_counted_and_the_node_stays_up(ros_processes, ros_probe, params_dir, table_view):
    frame, truth = table_view
    node = start_map(ros_processes, params_dir, rgb_topic="/cam/rgb", depth_topic="/cam/depth",
                     camera_info_topic="/cam/info", diagnostics_period_s=0.2)
    diag_q = ros_probe.subscribe("/diagnostics", DiagnosticArray)
    rgb_pub = ros_probe.publisher("/cam/rgb", Image, qos=IMAGE_QOS)
    depth_pub = ros_probe.publisher("/cam/depth", Image, qos=IMAGE_QOS)
    tf_pub = ros_probe.publisher("/tf_static", TFMessage, qos=STATIC_QOS)
    info_pub = ros_probe.publisher("/cam/info", CameraInfo)
    sec = [100]

    def send(depth=None, frame_id=CAM, info=True, info_size=None, rgb=None):
        sec[0] += 1
        from builtin_interfaces.msg import Time

        stamp = Time(sec=sec[0])
        if info:
            info_pub.publish(_info(frame, stamp, *(info_size or (None, None))))
            ros_probe.spin_for(0.1)
        r, d = _image_msgs(frame, stamp, frame_id, depth)
        rgb_pub.publish(rgb or r)
        depth_pub.publish(d)
        ros_probe.spin_for(0.3)

    send(info=False)  # 1. no camera_info yet
    diag(ros_probe, diag_q, lambda v: int(v.get("skipped_missing_camera_info", 0)) >= 1)
    send(info_size=(160, 120))  # 2. camera_info says 160x120
    diag(ros_probe, diag_q, lambda v: int(v.get("skipped_size_mismatch", 0)) >= 1)
    send(depth=np.full(frame.depth.shape, np.nan, np.float32))  # 3. all-NaN depth
    send(depth=np.zeros(frame.depth.shape, np.float32))  # 4. all-zero depth
    diag(ros_probe, diag_q, lambda v: int(v.get("skipped_no_depth", 0)) >= 2)
    send()  # 5. frame unknown to TF (no transform published yet)
    diag(ros_probe, diag_q, lambda v: int(v.get("skipped_unknown_frame", 0)) >= 1)
    bad = Image(encoding="mono8", height=frame.height, width=frame.width, step=frame.width, data=bytes(frame.width *
                                                                                                         frame.height))
    bad.header.frame_id = CAM
    from builtin_interfaces.msg import Time

    bad.header.stamp = Time(sec=sec[0] + 1)
    send(rgb=bad)  # 6. unsupported encoding
    values = diag(ros_probe, diag_q, lambda v: int(v.get("skipped_bad_encoding", 0)) >= 1)
    assert int(values["frames_processed"]) == 0 and int(values["frames_skipped"]) >= 6
    assert node.alive()
    # a query says so too: "no object" reads differently when no frame was ever used
    summary = query(ros_probe, "the yellow cube").message
    assert "0 camera frame(s) used" in summary and "bad_encoding: 1" in summary, summary
    # and, with no frame used for 5 s, the log says what did arrive
    node.wait_for_output("no camera frame used for", timeout=10)
    line = node.log_text().split("no camera frame used for")[-1].splitlines()[0]
    assert "depth image(s) on /cam/rgb and /cam/depth" in line and "0 camera frame(s) used" in line, line
    # then a good frame with its transform is processed and answers queries
    tf_pub.publish(_static_tf(frame))
    ros_probe.spin_for(0.3)
    send()
    diag(ros_probe, diag_q, lambda v: int(v.get("frames_processed", 0)) >= 1 and int(v.get("objects", 0)) >= 3)
    reply = query(ros_probe, "the yellow cube")
    p = reply.matches[0].object.position
    assert np.linalg.norm(np.array([p.x, p.y, p.z]) - truth["yellow cube"]) < 0.03
    assert "1 camera frame(s) used, the last" in reply.message, reply.message
    assert node.alive()


def test_save_clear_load_and_a_corrupt_file_is_set_aside(ros_processes, ros_probe, params_dir, table_view,
                                                         tmp_path):
    frame, truth = table_view
    path = tmp_path / "maps" / "semantic_map.json"
    node = start_map(ros_processes, params_dir, rgb_topic="/cam/rgb", depth_topic="/cam/depth",
                     camera_info_topic="/cam/info", map_file=str(path))
    map_q = ros_probe.subscribe("semantic_map", SemanticMap)
    rgb_pub = ros_probe.publisher("/cam/rgb", Image, qos=IMAGE_QOS)
    depth_pub = ros_probe.publisher("/cam/depth", Image, qos=IMAGE_QOS)
    tf_pub = ros_probe.publisher("/tf_static", TFMessage, qos=STATIC_QOS)
    info_pub = ros_probe.publisher("/cam/info", CameraInfo)
    from builtin_interfaces.msg import Time

    tf_pub.publish(_static_tf(frame))
    for s in (1, 2):
        info_pub.publish(_info(frame, Time(sec=s)))
        ros_probe.spin_for(0.2)
        r, d = _image_msgs(frame, Time(sec=s))
        rgb_pub.publish(r)
        depth_pub.publish(d)
        ros_probe.spin_for(0.3)
    ros_probe.spin_until(lambda: any(len(m.objects) >= 3 for m in map_q.messages), 20, "a map with the cubes")
    n = len(map_q.messages[-1].objects)
    trig = lambda name: ros_probe.call(Trigger, f"/semantic_map/{name}", Trigger.Request())  # noqa: E731
    assert trig("save").success and path.is_file()
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # atomic: no temp file left
    assert len(json.loads(path.read_text())["objects"]) == n
    assert trig("clear").success and query(ros_probe, "the red cube").matches == []
    reply = trig("load")
    assert reply.success and f"loaded {n}" in reply.message
    assert query(ros_probe, "the red cube").matches[0].object.label == "red cube"
    # forget by text removes one entry
    forget = ros_probe.call(QueryObjects, "/semantic_map/forget", QueryObjects.Request(text="the red cube"))
    assert forget.success and len(forget.matches) == 1
    assert all(m.object.id != forget.matches[0].object.id for m in query(ros_probe, "cube", n=0).matches)
    # a corrupt (half-written) file is reported and set aside; the map in memory is unchanged
    before = len(query(ros_probe, "cube", n=0).matches)
    path.write_text(path.read_text()[: 60])
    reply = trig("load")
    assert not reply.success and "corrupt" in reply.message
    assert not path.exists() and len(list(path.parent.glob("semantic_map.json.corrupt-*"))) == 1
    assert len(query(ros_probe, "cube", n=0).matches) == before
    assert node.alive()


@pytest.mark.parametrize("value, says", [
    ("bogus", "noun_words must be off, accept, reject, heads or full, got 'bogus'"),
    ("true", "expecting type 'STRING'")])
def test_a_bad_noun_words_value_stops_the_node_with_one_line(ros_processes, params_dir, value, says):
    """noun_words is off | accept | reject | heads | full (a string): anything else,
    the old boolean too, stops the node at start with one line, not a traceback."""
    proc = ros_processes.start_node("rlstack_perception", "semantic_map", params_file=params_dir / "semantic_map.yaml",
                                    params={"noun_words": value if value != "true" else True})
    assert proc.wait(timeout=60.0) == 2
    log = proc.log_text()
    assert says in log and "Traceback" not in log
