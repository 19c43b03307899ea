"""docs/reference/qos.md matches the code: its profile table against the imported profile constants
(importing a node module starts nothing), and every subscriber in its topic table matches every
publisher on the topic. Camera subscriptions in the nodes all go through the shared helper.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

REPO = Path(__file__).resolve().parents[1]
PAGE = (REPO / "docs" / "reference" / "qos.md").read_text()
ENTRY = re.compile(r"([\w/ ()-]+?) `([^`]+)`")


def rows(heading: str):
    section = PAGE.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("|---")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[1:]]


def resolve(spec: str) -> QoSProfile:
    m = re.fullmatch(r"(best_effort )?depth (\d+)", spec)
    if m:
        rel = ReliabilityPolicy.BEST_EFFORT if m.group(1) else ReliabilityPolicy.RELIABLE
        return QoSProfile(depth=int(m.group(2)), reliability=rel)
    module, name = spec.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


PROFILES = rows("Profiles")


@pytest.mark.parametrize("row", PROFILES, ids=[r[0].strip("`") for r in PROFILES])
def test_each_profile_in_the_table_is_the_code(row):
    profile = resolve(row[0].strip("`"))
    assert (profile.reliability.name.lower(), profile.durability.name.lower(), str(profile.depth)) == \
        (row[1], row[2], row[3]), f"docs/reference/qos.md: {row[0]} is out of date"


def _entries(cell: str):
    return [(node.strip(), spec) for node, spec in ENTRY.findall(cell)]


TOPICS = rows("Topics")


@pytest.mark.parametrize("row", TOPICS, ids=[r[0] for r in TOPICS])
def test_every_subscriber_matches_every_publisher(row):
    named = {spec for cell in row[1:] for _, spec in _entries(cell) if not spec.startswith(("depth", "best_effort"))}
    listed = {r[0].strip("`") for r in PROFILES}
    assert named <= listed, f"{row[0]}: {sorted(named - listed)} missing from the profile table"
    for pub_node, pub_spec in _entries(row[1]):
        pub = resolve(pub_spec)
        for sub_node, sub_spec in _entries(row[2]):
            sub = resolve(sub_spec)
            if sub.reliability == ReliabilityPolicy.RELIABLE:
                assert pub.reliability == ReliabilityPolicy.RELIABLE, f"{row[0]}: {sub_node} never hears {pub_node}"
            if sub.durability == DurabilityPolicy.TRANSIENT_LOCAL:
                assert pub.durability == DurabilityPolicy.TRANSIENT_LOCAL, \
                    f"{row[0]}: {sub_node} never hears {pub_node}"


CAMERA_NODES = ["rlstack_perception/rlstack_perception/node.py",
                "rlstack_perception/rlstack_perception/grasp_pose_node.py",
                "rlstack_localization/rlstack_localization/localizer_node.py", "rlstack_nav/rlstack_nav/nav_node.py"]


@pytest.mark.parametrize("path", CAMERA_NODES)
def test_camera_subscriptions_go_through_the_sensor_helper(path):
    tree = ast.parse((REPO / "ros2_ws" / "src" / path).read_text())
    direct, helper = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            types = [a.id for a in node.args if isinstance(a, ast.Name) and a.id in ("Image", "CameraInfo")]
            if fn == "create_subscription" and types:
                direct.append(f"line {node.lineno}")
            elif fn == "sensor_subscription" and types:
                helper.append(node.lineno)
    assert not direct, f"{path}: camera subscription without rlstack_common.qos.sensor_subscription at {direct}"
    assert helper, f"{path}: no camera subscription found"
