"""Every ROS process runs Fast DDS over shared memory only: no UDP, nothing leaves the machine."""

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rlstack_testing.processes import inet_sockets

NS = {"dds": "http://www.eprosima.com"}


def test_environment_points_at_the_project_profile(repo):
    assert Path(os.environ["FASTDDS_DEFAULT_PROFILES_FILE"]) == repo / "config" / "fastdds_shm_only.xml"


@pytest.mark.parametrize("name, segment, max_message", [
    ("fastdds_shm_only.xml", 16 * 1024 * 1024, 4 * 1024 * 1024),   # default: camera frames fit
    ("fastdds_shm_small.xml", 1024 * 1024, 256 * 1024),            # nodes that send no images
])
def test_profile_is_shared_memory_only(repo, name, segment, max_message):
    root = ET.parse(repo / "config" / name).getroot()
    [descriptor] = root.findall(".//dds:transport_descriptor", NS)
    assert descriptor.findtext("dds:type", namespaces=NS) == "SHM"
    assert int(descriptor.findtext("dds:segment_size", namespaces=NS)) == segment
    assert int(descriptor.findtext("dds:maxMessageSize", namespaces=NS)) == max_message
    participant = root.find(".//dds:participant", NS)
    assert participant.get("is_default_profile") == "true"
    assert participant.findtext(".//dds:useBuiltinTransports", namespaces=NS) == "false"


def test_environment_selects_fast_dds_with_the_profile():
    assert os.environ["RMW_IMPLEMENTATION"] == "rmw_fastrtps_cpp"
    # LOCALHOST would make rmw_fastrtps add UDP transports (docs/reference/middleware.md).
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SYSTEM_DEFAULT"


def test_running_nodes_hold_no_network_socket(ros_processes, ros_probe, params_dir):
    """Measured on live processes: talking nodes hold no TCP or UDP socket at all."""
    from std_msgs.msg import UInt32

    ros_processes.start_node("rlstack_smoke", "smoke_map", params_file=params_dir / "smoke_map.yaml")
    ros_processes.start_node("rlstack_smoke", "smoke_talker", params_file=params_dir / "smoke_talker.yaml")
    ros_probe.collect("/smoke_talker/round_trips", UInt32, count=1, timeout=20)  # traffic flowed
    for proc in ros_processes.processes:
        assert inet_sockets(proc.pid) == [], f"{proc.name} holds network sockets"
    assert inet_sockets(os.getpid()) == [], "the test's own probe holds network sockets"


def test_small_message_profile_holds_no_network_socket(ros_processes, ros_probe, repo):
    """A node on the 1 MiB-segment profile talks over shared memory only, too."""
    from rlstack_interfaces.srv import QueryObjects
    from rlstack_testing import resolve_executable

    small = repo / "config" / "fastdds_shm_small.xml"
    node = ros_processes.start([str(resolve_executable("rlstack_smoke", "smoke_map"))], name="smoke_map_small",
                               env={"FASTDDS_DEFAULT_PROFILES_FILE": str(small)})
    reply = ros_probe.call(QueryObjects, "/query_objects", QueryObjects.Request(text="cube"))
    assert reply.success
    assert inet_sockets(node.pid) == []


TF_STATIC_READERS = ("rlstack_mission.mission_node", "rlstack_perception.node", "rlstack_perception.grasp_pose_node",
                     "rlstack_nav.nav_node", "rlstack_localization.localizer_node")


@pytest.mark.parametrize("module", TF_STATIC_READERS, ids=lambda m: m.split(".")[-1])
def test_every_tf_static_reader_uses_the_shared_profile(module):
    import importlib

    from rlstack_common import qos

    assert importlib.import_module(module).TF_STATIC is qos.TF_STATIC


def test_a_late_tf_static_subscriber_gets_every_publishers_message(ros_domain_id):
    """/tf_static holds one latched message per publisher (the bridge's camera mount, navigation's
    map -> odom). A subscriber with a history of 1 keeps only the one delivered last, when both
    arrive before its callback runs: the mission lost map -> odom that way (CI: every semantic-map
    match dropped, NOT_FOUND). With the shared profile (rlstack_common.qos.TF_STATIC, which every
    reader uses: above) both arrive. (A live graph cannot be checked instead: discovery does not
    carry a reader's history depth.)"""
    import time

    from geometry_msgs.msg import TransformStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from tf2_msgs.msg import TFMessage

    from rlstack_common.qos import TF_STATIC
    from rlstack_testing.probe import RosProbe

    name, profile = "TF_STATIC", TF_STATIC
    latched_1 = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
    publishers = RosProbe(ros_domain_id, name="tf_static_publishers")
    try:
        keep = []
        for parent, child in (("map", "odom"), ("base_link", "head_camera_link")):
            pub = publishers.node.create_publisher(TFMessage, "/tf_static", latched_1)
            t = TransformStamped()
            t.header.frame_id, t.child_frame_id = parent, child
            pub.publish(TFMessage(transforms=[t]))
            keep.append(pub)
        received = {}
        for label, qos in (("depth_1", latched_1), (name, profile)):
            late = RosProbe(ros_domain_id, name=f"late_{label.lower()}")
            try:
                got = received.setdefault(label, [])
                late.node.create_subscription(
                    TFMessage, "/tf_static", lambda m, got=got: got.extend(t.child_frame_id for t in m.transforms), qos)
                time.sleep(2.0)     # both messages reach the reader's history before any callback runs
                late.spin_for(1.0)
            finally:
                late.close()
        assert sorted(received[name]) == ["head_camera_link", "odom"], received
        assert len(received["depth_1"]) == 1, received     # why the profile matters
    finally:
        publishers.close()
