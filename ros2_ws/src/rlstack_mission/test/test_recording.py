"""McapRecorder: topics from another process into an MCAP file that rosbag2 and the mcap readers open.

The publisher is a real process on the test's private domain (rlstack_testing's harness). Every
wait spins the probe until a condition holds (graph counts, message counts); nothing sleeps.
"""

import math
import sys
import textwrap
import warnings

import pytest
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from rlstack_mission.recording import (
    DEFINITION_SEPARATOR,
    McapRecorder,
    message_class,
    message_definition,
    msg_dependencies,
    msg_file,
    qos_to_rosbag2,
    split_type_name,
)

pytest_plugins = ["rlstack_testing.pytest_plugin"]

N = 5  # messages per streaming topic

# Publishes two latched topics at once, then waits until the recorder has subscribed to the three
# streaming topics and publishes N messages on each; then stays up (a latched sample is only
# delivered while its publisher lives).
PUBLISHER = textwrap.dedent(
    """\
    import sys, time
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from geometry_msgs.msg import PoseStamped, TransformStamped
    from sensor_msgs.msg import Image
    from std_msgs.msg import String
    from tf2_msgs.msg import TFMessage

    n = int(sys.argv[1])
    rclpy.init()
    node = rclpy.create_node("recording_test_publisher")
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_publisher(String, "/latched", latched).publish(String(data="latched-hello"))
    tf = TransformStamped()
    tf.header.frame_id, tf.child_frame_id = "base_link", "camera_link"
    tf.transform.translation.z = 0.5
    tf.transform.rotation.w = 1.0
    node.create_publisher(TFMessage, "/tf_static", latched).publish(TFMessage(transforms=[tf]))
    chatter = node.create_publisher(String, "/chatter", 10)
    pose = node.create_publisher(PoseStamped, "/pose", 10)
    image = node.create_publisher(Image, "/camera/image",
                                  QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
    print("latched published", flush=True)
    while min(p.get_subscription_count() for p in (chatter, pose, image)) < 1:
        rclpy.spin_once(node, timeout_sec=0.05)
    for i in range(n):
        chatter.publish(String(data=f"msg-{i}"))
        p = PoseStamped()
        p.header.frame_id = "map"
        p.header.stamp.sec, p.header.stamp.nanosec = 100 + i, 5
        p.pose.position.x, p.pose.position.y = float(i), -0.5 * i
        p.pose.orientation.w = 1.0
        pose.publish(p)
        img = Image(height=4, width=6, encoding="rgb8", step=18, data=bytes([i]) * 72)
        img.header.frame_id = "camera_link"
        image.publish(img)
        time.sleep(0.02)  # pace the best-effort stream (publisher side only)
    print("published all", flush=True)
    rclpy.spin(node)
    """
)

TOPICS = {
    "/chatter": "std_msgs/msg/String",
    "/pose": None,                           # type taken from the graph
    "/camera/image": "sensor_msgs/msg/Image",
    "/latched": None,
    "/tf_static": None,
    "/map": "nav_msgs/msg/OccupancyGrid",    # latched default QoS: subscribed at once; nobody publishes
    "/nobody": "std_msgs/msg/String",        # waits for a publisher that never comes
}
EXPECTED_TYPES = {
    "/chatter": "std_msgs/msg/String",
    "/pose": "geometry_msgs/msg/PoseStamped",
    "/camera/image": "sensor_msgs/msg/Image",
    "/latched": "std_msgs/msg/String",
    "/tf_static": "tf2_msgs/msg/TFMessage",
    "/map": "nav_msgs/msg/OccupancyGrid",
}
EXPECTED_COUNTS = {"/chatter": N, "/pose": N, "/camera/image": N, "/latched": 1, "/tf_static": 1, "/map": 0}


def read_mcap(path):
    """Everything the tests look at, through the ros2 decoder of mcap-ros2-support."""
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        header = reader.get_header()
        summary = reader.get_summary()
        metadata = {m.name: m.metadata for m in reader.iter_metadata()}
        messages = [(channel.topic, message, decoded)
                    for _, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False)]
    return header, summary, metadata, messages


def test_records_topics_from_another_process(ros_processes, ros_probe, tmp_path):
    from rclpy.serialization import serialize_message
    from std_msgs.msg import String

    path = tmp_path / "rec" / "session.mcap"
    recorder = McapRecorder(ros_probe.node, path, TOPICS).start()
    # Started before the publisher exists: only /map (known type, latched default QoS) is subscribed.
    assert recorder.subscribed == ["/map"]
    assert set(recorder.pending) == set(TOPICS) - {"/map"}

    t_start = ros_probe.node.get_clock().now().nanoseconds
    publisher = ros_processes.start([sys.executable, "-c", PUBLISHER, str(N)], name="publisher")
    expected = {**EXPECTED_COUNTS, "/nobody": 0}
    ros_probe.spin_until(lambda: recorder.counts == expected, timeout=30,
                         what=f"recorded counts {expected} (got {recorder.counts})")
    publisher.wait_for_output("published all", timeout=10)
    assert recorder.pending == ["/nobody"] and not recorder.errors
    assert recorder.types["/pose"] == "geometry_msgs/msg/PoseStamped"
    assert not path.exists()                      # written to a temporary file until stop
    assert recorder.stop() == path
    t_stop = ros_probe.node.get_clock().now().nanoseconds
    assert path.is_file()
    assert not [p for p in path.parent.iterdir() if p.name != path.name]   # no temporary left

    header, summary, metadata, messages = read_mcap(path)
    assert header.profile == "ros2"

    # --- schemas and channels, as rosbag2 writes them
    channels = {c.topic: c for c in summary.channels.values()}
    assert set(channels) == set(EXPECTED_TYPES)   # /nobody was never subscribed: no channel
    for topic, type_name in EXPECTED_TYPES.items():
        channel = channels[topic]
        schema = summary.schemas[channel.schema_id]
        assert (schema.name, schema.encoding, channel.message_encoding) == (type_name, "ros2msg", "cdr")
        assert schema.data.decode() == message_definition(type_name)
    assert len(summary.schemas) == 5              # std_msgs/msg/String is shared by two topics
    pose_text = summary.schemas[channels["/pose"].schema_id].data.decode()
    assert pose_text.startswith(msg_file("geometry_msgs/msg/PoseStamped").read_text())
    for dependency in ("geometry_msgs/Pose", "geometry_msgs/Point", "geometry_msgs/Quaternion",
                       "std_msgs/Header", "builtin_interfaces/Time"):
        assert f"\n{DEFINITION_SEPARATOR}\nMSG: {dependency}\n" in pose_text
    assert pose_text.count(DEFINITION_SEPARATOR) == 5

    # --- the publishers' QoS and type hash on each channel (what `ros2 bag play` offers again)
    def offered(topic):
        return yaml.safe_load(channels[topic].metadata["offered_qos_profiles"])

    assert offered("/latched")[0]["durability"] == "transient_local"
    assert offered("/tf_static")[0]["reliability"] == "reliable"
    assert offered("/camera/image")[0]["reliability"] == "best_effort"
    assert offered("/chatter")[0]["deadline"] == {"sec": 9223372036, "nsec": 854775807}  # infinite
    assert channels["/map"].metadata["offered_qos_profiles"] == ""      # no publisher was seen
    assert channels["/chatter"].metadata["topic_type_hash"].startswith("RIHS01_")

    # --- counts: recorder, MCAP statistics and the rosbag2 metadata record agree
    stats = summary.statistics
    assert {c.topic: stats.channel_message_counts.get(cid, 0) for cid, c in summary.channels.items()} \
        == EXPECTED_COUNTS
    assert stats.message_count == sum(EXPECTED_COUNTS.values()) == len(messages)
    bag = yaml.safe_load(metadata["rosbag2"]["serialized_metadata"])
    assert bag["version"] == 9 and bag["storage_identifier"] == "mcap"
    assert bag["message_count"] == stats.message_count
    assert {t["topic_metadata"]["name"]: t["message_count"] for t in bag["topics_with_message_count"]} \
        == EXPECTED_COUNTS
    assert {t["topic_metadata"]["name"]: t["topic_metadata"]["type"] for t in bag["topics_with_message_count"]} \
        == EXPECTED_TYPES
    assert bag["relative_file_paths"] == ["session.mcap"]

    # --- content, decoded from the recorded CDR
    by_topic = {}
    for topic, message, decoded in messages:
        by_topic.setdefault(topic, []).append((message, decoded))
        assert t_start <= message.log_time <= t_stop
        assert message.publish_time > 0
    assert [d.data for _, d in by_topic["/chatter"]] == [f"msg-{i}" for i in range(N)]
    # raw=True: the file holds the CDR bytes as delivered, not a re-encoding. (Fast DDS pads the
    # payload to a multiple of 4 on the wire, which serialize_message does not: proof enough.)
    raw, encoded = bytes(by_topic["/chatter"][0][0].data), serialize_message(String(data="msg-0"))
    assert raw[:len(encoded)] == encoded and not any(raw[len(encoded):]) and len(raw) - len(encoded) < 4
    poses = [d for _, d in by_topic["/pose"]]
    assert [(p.pose.position.x, p.pose.position.y) for p in poses] == [(float(i), -0.5 * i) for i in range(N)]
    assert [(p.header.stamp.sec, p.header.stamp.nanosec) for p in poses] == [(100 + i, 5) for i in range(N)]
    assert {p.header.frame_id for p in poses} == {"map"}
    images = sorted((d for _, d in by_topic["/camera/image"]), key=lambda im: im.data[0])
    assert [(im.width, im.height, im.encoding, im.step) for im in images] == [(6, 4, "rgb8", 18)] * N
    assert [bytes(im.data) for im in images] == [bytes([i]) * 72 for i in range(N)]
    assert [d.data for _, d in by_topic["/latched"]] == ["latched-hello"]
    [(_, tf)] = by_topic["/tf_static"]
    assert tf.transforms[0].child_frame_id == "camera_link"
    assert math.isclose(tf.transforms[0].transform.translation.z, 0.5)

    # --- and the high-level reader of mcap-ros2-support decodes the whole file
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the module warns on import
        from mcap_ros2.reader import read_ros2_messages
    decoded = list(read_ros2_messages(str(path)))
    assert len(decoded) == len(messages)
    assert {m.channel.topic for m in decoded} == {t for t, c in EXPECTED_COUNTS.items() if c}


def test_latched_map_from_the_graph_abort_and_context_manager(ros_probe, tmp_path):
    """Topic list form (type from the graph); the latched default QoS gets a /map published
    before the recorder existed; abort leaves no file; the context manager stops and renames."""
    from nav_msgs.msg import OccupancyGrid
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    grid = OccupancyGrid()
    grid.header.frame_id = "map"
    grid.info.resolution, grid.info.width, grid.info.height = 0.05, 3, 2
    grid.data = [0, 100, -1, 0, 0, 100]
    map_pub = ros_probe.node.create_publisher(OccupancyGrid, "/map", latched)
    map_pub.publish(grid)

    aborted = tmp_path / "aborted.mcap"
    recorder = McapRecorder(ros_probe.node, aborted, ["/map"]).start()
    ros_probe.spin_until(lambda: recorder.counts["/map"] == 1, timeout=15, what="the latched /map")
    recorder.abort()
    assert not list(tmp_path.iterdir())
    with pytest.raises(RuntimeError, match="aborted"):
        recorder.stop()

    path = tmp_path / "map.mcap"
    with McapRecorder(ros_probe.node, path, ["map"], compression="none") as recorder:  # relative name
        ros_probe.spin_until(lambda: recorder.counts["/map"] == 1, timeout=15, what="the latched /map")
    assert recorder.stop() == path                # stopping twice is harmless
    _, summary, _, messages = read_mcap(path)
    [(topic, _, decoded)] = messages
    assert topic == "/map"
    assert list(decoded.data) == [0, 100, -1, 0, 0, 100]
    assert (decoded.info.width, decoded.info.height) == (3, 2)
    [channel] = summary.channels.values()
    assert yaml.safe_load(channel.metadata["offered_qos_profiles"])[0]["durability"] == "transient_local"


def test_records_an_action_like_ros2_bag(ros_probe, tmp_path):
    """An action's hidden topics: feedback, status and the result from the server's service
    events (introspection on, as the mission has it), decodable by a third-party reader."""

    from rclpy.action import ActionClient, ActionServer
    from rclpy.qos import qos_profile_services_default
    from rclpy.service_introspection import ServiceIntrospectionState

    from rlstack_interfaces.action import Fetch

    node = ros_probe.node

    def execute(handle):
        handle.publish_feedback(Fetch.Feedback(phase="LOCATE", detail="looking"))
        handle.succeed()
        return Fetch.Result(code=0, reason="brought", phase_names=["LOCATE"], phase_durations=[1.5])

    server = ActionServer(node, Fetch, "fetch", execute_callback=execute)
    server.configure_introspection(node.get_clock(), qos_profile_services_default, ServiceIntrospectionState.CONTENTS)
    topics = {"/fetch/_action/feedback": "rlstack_interfaces/action/Fetch_FeedbackMessage",
              "/fetch/_action/status": "action_msgs/msg/GoalStatusArray",
              "/fetch/_action/get_result/_service_event": "rlstack_interfaces/action/Fetch_GetResult_Event"}
    path = tmp_path / "action.mcap"
    recorder = McapRecorder(node, path, topics).start()
    ros_probe.spin_until(lambda: set(recorder.subscribed) == set(topics), timeout=15,
                         what="the recorder's subscriptions")
    client = ActionClient(node, Fetch, "fetch")
    ros_probe.spin_until(client.server_is_ready, timeout=15, what="the action server")
    sent = client.send_goal_async(Fetch.Goal(query="the yellow cube"))
    ros_probe.spin_until(sent.done, timeout=15, what="goal accepted")
    result = sent.result().get_result_async()
    ros_probe.spin_until(result.done, timeout=15, what="the result")
    # get_result: the server's 'request received' and 'response sent' events
    ros_probe.spin_until(lambda: all(recorder.counts[t] >= 1 for t in topics)
                         and recorder.counts["/fetch/_action/get_result/_service_event"] >= 2, timeout=15,
                         what=f"every action topic recorded ({recorder.counts})")
    recorder.stop()
    # mcap-ros2-support's decoder rejects type names with '_' (its vendored rosidl parser), as
    # rosbag2's own action recordings meet too; the bytes are checked against the schema's type.
    from rclpy.serialization import deserialize_message

    by_topic = {}
    with open(path, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages():
            assert schema.name == topics[channel.topic] and schema.encoding == "ros2msg"
            assert schema.data.decode() == message_definition(schema.name)
            by_topic.setdefault(channel.topic, []).append(deserialize_message(message.data, message_class(schema.name)))
    assert by_topic["/fetch/_action/feedback"][0].feedback.phase == "LOCATE"
    assert any(s.status == 4 for m in by_topic["/fetch/_action/status"] for s in m.status_list)  # SUCCEEDED
    responses = [e.response[0] for e in by_topic["/fetch/_action/get_result/_service_event"] if len(e.response)]
    assert responses and responses[0].result.reason == "brought" and list(responses[0].result.phase_names) == ["LOCATE"]
    # the schema text parses as .msg definitions (the feedback part of the .action file, the wrapper's fields)
    assert message_definition(topics["/fetch/_action/feedback"]).startswith(
        "unique_identifier_msgs/UUID goal_id\nrlstack_interfaces/Fetch_Feedback feedback\n")
    assert "MSG: rlstack_interfaces/Fetch_Result\nuint8 SUCCEEDED=0" in message_definition(
        topics["/fetch/_action/get_result/_service_event"])
    client.destroy()
    server.destroy()


# ---------------------------------------------------------------------------- pure parts
def test_definition_follows_rosbag2_layout():
    """Own text first; then each dependency once, depth first, sorted per level, each preceded by
    a newline, 80 '=' and 'MSG: pkg/Type' (rosbag2's LocalMessageDefinitionSource)."""
    def text(name):
        return msg_file(name).read_text()

    def section(name):
        return f"\n{'=' * 80}\nMSG: {name}\n" + text(name)

    expected = (text("geometry_msgs/msg/PoseStamped")
                + section("geometry_msgs/Pose")
                + section("geometry_msgs/Point")
                + section("geometry_msgs/Quaternion")
                + section("std_msgs/Header")
                + section("builtin_interfaces/Time"))
    assert message_definition("geometry_msgs/msg/PoseStamped") == expected
    assert message_definition("geometry_msgs/PoseStamped") == expected
    assert message_definition("std_msgs/msg/String") == text("std_msgs/msg/String")   # no dependencies


def test_dependencies_parse_like_rosbag2():
    text = textwrap.dedent(
        """\
        # Header and Pose in a comment are not fields
        Header header
        Other[] same_package_items
        geometry_msgs/Point[<=3] bounded
        string<=10 bounded_string
        wstring wide
        int32 CONSTANT=3
        float64[9] covariance
        builtin_interfaces/Time stamp  # trailing comment
        """
    )
    assert msg_dependencies(text, "my_pkg") == [
        "builtin_interfaces/Time", "geometry_msgs/Point", "my_pkg/Other", "std_msgs/Header"]


def test_type_names_and_qos_yaml():
    from rclpy.duration import Duration
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    assert split_type_name("sensor_msgs/msg/Image") == ("sensor_msgs", "msg", "Image")
    assert split_type_name("sensor_msgs/Image") == ("sensor_msgs", "msg", "Image")
    for bad in ("Image", "a/b/c/d", "sensor_msgs/msg/", "1pkg/msg/T"):
        with pytest.raises(ValueError):
            split_type_name(bad)
    qos = QoSProfile(depth=7, reliability=ReliabilityPolicy.BEST_EFFORT,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL, lifespan=Duration(seconds=2, nanoseconds=5))
    assert qos_to_rosbag2(qos) == {
        "history": "keep_last", "depth": 7, "reliability": "best_effort", "durability": "transient_local",
        "deadline": {"sec": 0, "nsec": 0}, "lifespan": {"sec": 2, "nsec": 5}, "liveliness": "system_default",
        "liveliness_lease_duration": {"sec": 0, "nsec": 0}, "avoid_ros_namespace_conventions": False,
    }
