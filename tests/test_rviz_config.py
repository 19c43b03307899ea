"""config/rviz/fetch.rviz is an rviz2 config that shows only what the project publishes.

rviz2 is not installed here, so the file is checked statically: it parses as YAML in the
layout rviz2 saves, uses only rviz_default_plugins displays, and every topic it subscribes to
(or the goal and initial-pose tools publish to) is one our docs, launch files or params files name. A display
that asks for Transient Local only matches a latched publisher, so its topic must be
documented as latched / transient local.
"""

import re

import pytest
import yaml
from conftest import REPO

RVIZ = REPO / "config" / "rviz" / "fetch.rviz"

ALLOWED_DISPLAYS = {
    "rviz_default_plugins/Grid", "rviz_default_plugins/TF", "rviz_default_plugins/Map",
    "rviz_default_plugins/Path", "rviz_default_plugins/Image", "rviz_default_plugins/MarkerArray",
    "rviz_default_plugins/Odometry", "rviz_default_plugins/Pose", "rviz_default_plugins/RobotModel",
}
# The values rviz2's QoS properties accept.
QOS_VALUES = {
    "Durability Policy": {"Volatile", "Transient Local", "System Default"},
    "History Policy": {"Keep Last", "Keep All", "System Default"},
    "Reliability Policy": {"Reliable", "Best Effort", "System Default"},
}
# What the fetch view must show (topic -> display class).
EXPECTED = {
    "/map": "rviz_default_plugins/Map",
    "/nav_controller/obstacle_grid": "rviz_default_plugins/Map",
    "/plan": "rviz_default_plugins/Path",
    "/odom": "rviz_default_plugins/Odometry",
    "/head_camera/image_raw": "rviz_default_plugins/Image",
    "/semantic_map/markers": "rviz_default_plugins/MarkerArray",
    "/sim_ground_truth/markers": "rviz_default_plugins/MarkerArray",
    "/grasp_target": "rviz_default_plugins/Pose",
    "/fetch/dropoff": "rviz_default_plugins/Pose",
    "/robot_description": "rviz_default_plugins/RobotModel",
}


def _config() -> dict:
    return yaml.safe_load(RVIZ.read_text())


def _displays(displays):
    """Every display, groups (rviz_common/Group) flattened."""
    for d in displays:
        yield d
        yield from _displays(d.get("Displays", []))


def _documented_lines() -> list:
    """Lines that name the project's topics: docs/README table rows, launch files, params files."""
    lines = []
    for md in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        lines += [ln for ln in md.read_text().splitlines() if ln.lstrip().startswith("|")]
    for y in [*sorted((REPO / "launch").glob("*.launch.yaml")), *sorted((REPO / "launch" / "params").glob("*.yaml"))]:
        lines += y.read_text().splitlines()
    return lines


def _names(topic: str):
    """A line names `topic` as /a/b, or (nodes in the root namespace) as the relative `a/b` in backticks."""
    absolute = re.compile(rf"(?<![\w/<>]){re.escape(topic)}(?![\w/])")
    relative = re.compile(rf"`{re.escape(topic.lstrip('/'))}`")
    return lambda line: bool(absolute.search(line) or relative.search(line))


def _topic(display: dict) -> dict:
    """A display's topic property (RobotModel calls it "Description Topic")."""
    return display.get("Topic") or display["Description Topic"]


def _topics(cfg: dict) -> dict:
    return {_topic(d)["Value"]: d for d in _displays(cfg["Visualization Manager"]["Displays"])
            if "Topic" in d or "Description Topic" in d}


def test_layout_is_what_rviz2_saves():
    cfg = _config()
    assert {"Panels", "Visualization Manager", "Window Geometry"} <= set(cfg)
    vm = cfg["Visualization Manager"]
    assert vm["Global Options"]["Fixed Frame"] == "map"
    assert vm["Views"]["Current"]["Class"] in {"rviz_default_plugins/TopDownOrtho", "rviz_default_plugins/Orbit"}
    assert all(p["Class"].startswith("rviz_common/") for p in cfg["Panels"])
    names = [d["Name"] for d in _displays(vm["Displays"])]
    assert len(names) == len(set(names)), f"display names repeat: {names}"


def test_every_display_is_an_allowed_default_plugin():
    displays = list(_displays(_config()["Visualization Manager"]["Displays"]))
    classes = [d["Class"] for d in displays]
    assert set(classes) <= ALLOWED_DISPLAYS, set(classes) - ALLOWED_DISPLAYS
    assert "rviz_default_plugins/TF" in classes and "rviz_default_plugins/Grid" in classes
    # The robot drawn from the URDF that robot_state_publisher (rlstack_description) latches.
    robot = [d for d in displays if d["Class"] == "rviz_default_plugins/RobotModel"]
    assert len(robot) == 1 and robot[0]["Enabled"] is True
    assert robot[0]["Description Source"] == "Topic"
    assert robot[0]["Visual Enabled"] is True and robot[0]["TF Prefix"] == ""
    tf = next(d for d in displays if d["Class"] == "rviz_default_plugins/TF")
    assert tf["Frames"]["All Enabled"] is True


def test_expected_topics_and_qos_keys():
    topics = _topics(_config())
    assert {t: d["Class"] for t, d in topics.items()} == EXPECTED
    for topic, d in topics.items():
        qos = _topic(d)
        assert topic.startswith("/"), f"{topic}: use absolute names, rviz2 resolves relative ones in its own namespace"
        assert isinstance(qos["Depth"], int) and qos["Depth"] >= 1
        for key, allowed in QOS_VALUES.items():
            assert qos[key] in allowed, f"{topic}: {key} {qos[key]!r}"


@pytest.mark.parametrize("topic", sorted(EXPECTED))
def test_topic_is_one_the_project_publishes(topic):
    named = _names(topic)
    assert any(named(ln) for ln in _documented_lines()), (
        f"{topic} is named in no docs table, launch file or params file: a typo, or a topic nobody publishes")


def test_latched_displays_subscribe_to_latched_topics():
    sources = [*sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "launch").rglob("*.yaml")),
               *sorted((REPO / "ros2_ws" / "src").glob("*/*/*.py"))]
    text = [ln for p in sources for ln in p.read_text().splitlines()]
    latched = re.compile(r"latched|transient local", re.I)
    transient = {t for t, d in _topics(_config()).items() if _topic(d)["Durability Policy"] == "Transient Local"}
    assert {"/map", "/plan", "/robot_description"} <= transient, (
        "the map, plan and robot description are published once: rviz must ask for the latched copy")
    for topic in transient:
        named = _names(topic)
        assert any(named(ln) and latched.search(ln) for ln in text), f"{topic} is not documented as latched"


def test_goal_tool_publishes_what_nav_controller_subscribes():
    tools = _config()["Visualization Manager"]["Tools"]
    goal = [t for t in tools if t["Class"] == "rviz_default_plugins/SetGoal"]
    assert len(goal) == 1 and goal[0]["Topic"]["Value"] == "/goal_pose"
    named = _names("/goal_pose")
    assert any(named(ln) and "sub" in ln for ln in _documented_lines())


def test_robot_model_reads_what_robot_state_publisher_latches():
    from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

    from rlstack_description.state_publisher import DESCRIPTION_QOS

    robot = _topics(_config())["/robot_description"]["Description Topic"]
    assert DESCRIPTION_QOS.durability == DurabilityPolicy.TRANSIENT_LOCAL and robot["Durability Policy"] == \
        "Transient Local"
    assert DESCRIPTION_QOS.reliability == ReliabilityPolicy.RELIABLE and robot["Reliability Policy"] == "Reliable"


def test_initial_pose_tool_publishes_what_the_localizer_subscribes():
    tools = _config()["Visualization Manager"]["Tools"]
    initial = [t for t in tools if t["Class"] == "rviz_default_plugins/SetInitialPose"]
    assert len(initial) == 1 and initial[0]["Topic"]["Value"] == "/initialpose"
    assert initial[0]["Topic"]["Reliability Policy"] == "Reliable"
    named = _names("/initialpose")
    assert any(named(ln) and "sub" in ln for ln in _documented_lines())
