"""Camera QoS: a best-effort camera driver (sensor-data QoS, as most real drivers publish) feeds
the semantic map, and a subscription that cannot match a publisher says so in one line.

The semantic_map node runs as its own process on a private domain; this process is the driver.
"""

from __future__ import annotations

from builtin_interfaces.msg import Time
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image
from test_perception_node import STATIC_QOS, _image_msgs, _info, _static_tf, query, start_map, table_view  # noqa: F401
from tf2_msgs.msg import TFMessage

from rlstack_common.qos import SENSOR, sensor_subscription
from rlstack_interfaces.msg import SemanticMap


def test_the_sensor_profile_is_rclpys_sensor_data_with_a_shorter_history():
    assert (SENSOR.reliability, SENSOR.durability, SENSOR.history) == (
        qos_profile_sensor_data.reliability, qos_profile_sensor_data.durability, qos_profile_sensor_data.history)
    assert 1 <= SENSOR.depth <= qos_profile_sensor_data.depth


def test_a_best_effort_camera_driver_feeds_the_semantic_map(ros_processes, ros_probe, params_dir,
                                                           table_view):  # noqa: F811 (the fixture imported above)
    frame, _truth = table_view
    node = start_map(ros_processes, params_dir, rgb_topic="/cam/rgb", depth_topic="/cam/depth",
                     camera_info_topic="/cam/info")
    map_q = ros_probe.subscribe("semantic_map", SemanticMap)
    # the driver: images, depth and camera_info best effort (sensor-data QoS)
    rgb_pub = ros_probe.publisher("/cam/rgb", Image, qos=qos_profile_sensor_data)
    depth_pub = ros_probe.publisher("/cam/depth", Image, qos=qos_profile_sensor_data)
    info_pub = ros_probe.publisher("/cam/info", CameraInfo, qos=qos_profile_sensor_data)
    tf_pub = ros_probe.publisher("/tf_static", TFMessage, qos=STATIC_QOS)
    tf_pub.publish(_static_tf(frame))

    def mapped() -> bool:
        return any(len(m.objects) >= 3 for m in map_q.messages)

    # best effort may drop a frame: keep the camera running, as a driver does, until the map has the cubes
    for s in range(1, 31):
        info_pub.publish(_info(frame, Time(sec=s)))
        r, d = _image_msgs(frame, Time(sec=s))
        rgb_pub.publish(r)
        depth_pub.publish(d)
        ros_probe.spin_for(0.3)
        if mapped():
            break
    ros_probe.spin_until(mapped, 10, "a map with the cubes from a best-effort camera")
    assert query(ros_probe, "the red cube").matches[0].object.label == "red cube"
    assert node.alive()


def test_an_incompatible_publisher_is_named_in_one_line(ros_probe, capfd):
    """A subscription that requests more than a publisher offers (here reliable + transient local
    against a best-effort volatile driver) gets no messages; the shared helper logs why, once."""
    strict = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    got = []
    sensor_subscription(ros_probe.node, Image, "/strict/image", got.append, qos=strict)
    pub = ros_probe.node.create_publisher(Image, "/strict/image", qos_profile_sensor_data)
    seen = []

    def logged() -> bool:
        seen.append(capfd.readouterr().err)
        return "/strict/image: a publisher's QoS is incompatible" in "".join(seen)

    ros_probe.spin_until(logged, 15, "the incompatible-QoS line")
    pub.publish(Image())
    ros_probe.spin_for(0.5)
    seen.append(capfd.readouterr().err)
    lines = [ln for ln in "".join(seen).splitlines() if "/strict/image:" in ln]
    assert len(lines) == 1, lines                          # once per policy, not per message or per match
    assert "requested reliable, transient_local, depth 1" in lines[0] and "ros2 topic info -v" in lines[0]
    assert got == []
