"""Every node's parameter table agrees with its node, its params files, its launch files and the docs.

One table per node (``rlstack_common.param_table.Param`` lists, registered in
``tools/gen_reference.py`` ``TABLES``) is the single statement of a parameter's name, type, default,
range and meaning. Fast: tables and files are read, no node is started.
"""

import ast
import re
import sys

import pytest
import yaml
from conftest import REPO

sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "sim_bridges"))
import gen_reference  # noqa: E402

from rlstack_common.param_table import check_table, check_values, differences, load_params_yaml  # noqa: E402

SRC = REPO / "ros2_ws" / "src"
PARAMS = REPO / "launch" / "params"

#: node -> (the source file that declares its parameters, the table it declares from)
NODE_SOURCES = {
    "nav_controller": ("rlstack_nav/rlstack_nav/nav_node.py", "PARAMS"),
    "mission": ("rlstack_mission/rlstack_mission/mission_node.py", "MISSION"),
    "sim_bridge": ("rlstack_sim/rlstack_sim/bridge_settings.py", "bridge_parameters"),
    "semantic_map": ("rlstack_perception/rlstack_perception/node.py", "SEMANTIC_MAP"),
    "grasp_pose": ("rlstack_perception/rlstack_perception/grasp_pose_node.py", "GRASP_POSE"),
    "policy_node": ("rlstack_policy/rlstack_policy/policy_node.py", "POLICY_NODE"),
    "localizer": ("rlstack_localization/rlstack_localization/localizer_node.py", "LOCALIZER"),
    "arm_adapter": ("rlstack_adapters/rlstack_adapters/arm_adapter.py", "ARM_ADAPTER"),
    "twist_stamper": ("rlstack_adapters/rlstack_adapters/twist_stamper.py", "TWIST_STAMPER"),
    "cmd_vel_mux": ("rlstack_adapters/rlstack_adapters/cmd_vel_mux.py", "CMD_VEL_MUX"),
    "live_view": ("rlstack_view/rlstack_view/live_view.py", "LIVE_VIEW"),
    "robot_state_publisher": ("rlstack_description/rlstack_description/state_publisher.py",
                              "ROBOT_STATE_PUBLISHER"),
    "smoke_talker": ("rlstack_smoke/rlstack_smoke/talker_node.py", "SMOKE_TALKER"),
    "smoke_map": ("rlstack_smoke/rlstack_smoke/map_node.py", "SMOKE_MAP"),
    "train_node": ("rlstack_learning/rlstack_learning/ros/train_node.py", "TRAIN_NODE"),
    "batch_bridge": ("rlstack_sim/rlstack_sim/batch_bridge.py", "batch_bridge_parameters"),
    "ground_truth_grasp_target": ("rlstack_sim/rlstack_sim/ground_truth_grasp_target.py",
                                  "GROUND_TRUTH_GRASP_TARGET"),
    "echo_node": ("rlstack_testing/rlstack_testing/echo_node.py", "ECHO_NODE"),
}

#: params files whose purpose is to set values other than the defaults: file -> the names they may change
SETTINGS_FILES = {
    **{f"policy_{b}.yaml": {"bundle_path", "autostart", "trigger", "safe_action", "max_rate", "key_indices"}
       for b in ("ball_plate", "ball_plate_pixels", "cartpole", "lift", "mobile_lift")},
    # the exploration waypoints of maps/home.yaml; the table's [0.0] (no whole triple) stops a node given none
    "mission.yaml": {"explore_waypoints"},
}

#: launch files whose own arguments feed a parameter a value other than its params file's, on purpose:
#: file -> parameter names (a robot's driver topics, a map, a bundle, ...)
LAUNCH_OVERRIDES = {
    "fetch.launch.yaml": {"map_yaml", "last_pose_file", "bundle_path", "seed", "depth_noise", "wheel_odometry",
                          "odom_gyro", "publish_tf"},
    "localization.launch.yaml": {"map_yaml", "wheel_odometry"},
    "nav.launch.yaml": {"map_yaml"},
    "train_lockstep.launch.yaml": {"scene", "ground_truth_rate_hz"},
    "robot.launch.yaml": {"map_yaml", "last_pose_file", "bundle_path", "odom_topic", "depth_topic", "rgb_topic",
                          "camera_info_topic", "floor_noise_per_m2", "static_noise_per_m2", "publish_map_to_odom"},
}


def params_file_node(name: str) -> str:
    return "policy_node" if name.startswith("policy_") else name[: -len(".yaml")]


@pytest.mark.parametrize("node", sorted(gen_reference.TABLES))
def test_table_is_well_formed(node):
    table = gen_reference.table(node)
    assert not check_table(table), check_table(table)
    unranged = [p.name for p in table if isinstance(p.default, (int, float)) and not isinstance(p.default, bool)
                and p.min_value is None]
    assert not unranged, f"{node}: numeric parameters without a range: {unranged}"


def test_every_node_declares_from_its_table():
    assert set(NODE_SOURCES) == set(gen_reference.TABLES)
    for node, (rel, table_name) in NODE_SOURCES.items():
        text = (SRC / rel).read_text()
        calls = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
                 for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)}
        assert "declare_all" in calls and table_name in text, f"{rel} does not declare from {table_name}"
        assert "declare_parameter" not in calls, f"{rel} still declares a parameter by itself"
    # no other module declares parameters one call at a time
    declaring = {str(p.relative_to(SRC)) for p in SRC.glob("*/*/**/*.py")
                 if "/test/" not in str(p) and re.search(r"\bdeclare_parameter\(\s*self\b|= lambda .*declare_parameter"
                                                          r"|self\.declare_parameter\(", p.read_text())}
    assert not declaring, f"declare from a table (rlstack_common.param_table): {sorted(declaring)}"


@pytest.mark.parametrize("path", sorted(PARAMS.glob("*.yaml")), ids=lambda p: p.name)
def test_params_file_agrees_with_the_table(path):
    node = params_file_node(path.name)
    assert node in gen_reference.TABLES, f"no node '{node}' for {path.name}"
    for key, values in load_params_yaml(str(path)).items():
        assert key in ("/**", node), f"{path.name}: section '{key}' is neither /** nor {node}"
        table = gen_reference.table(node)
        problems = check_values(table, values)
        assert not problems, f"{path.name}: " + "; ".join(problems)
        missing = {p.name for p in table} - set(values)
        assert not missing, f"{path.name} does not list {sorted(missing)} (it lists every parameter of {node})"
        changed = differences(table, values)
        allowed = SETTINGS_FILES.get(path.name, set())
        assert set(changed) <= allowed, (f"{path.name} differs from the table defaults in "
                                         f"{ {n: changed[n] for n in set(changed) - allowed} }: change the "
                                         "default in the table, or the file")


def _launch_nodes(entries):
    """(node dict) of a launch file's own entries, groups included."""
    for entry in entries or []:
        if not isinstance(entry, dict):
            continue
        if "node" in entry:
            yield entry["node"]
        if "group" in entry:
            yield from _launch_nodes(entry["group"].get("launch") if isinstance(entry["group"], dict) else [])


@pytest.mark.parametrize("path", sorted((REPO / "launch").glob("*.launch.yaml")), ids=lambda p: p.name)
def test_launch_file_parameters_agree_with_the_tables(path):
    """A parameter a launch file sets is declared, of its type and in range; one set from the file's own
    argument equals the params file's value (the argument only passes it on) unless the file means to change it."""
    raw = yaml.safe_load(path.read_text())["launch"]
    args = {e["arg"]["name"]: e["arg"].get("default") for e in raw if isinstance(e, dict) and "arg" in e}
    problems = []
    for spec in _launch_nodes(raw):
        node = spec.get("name")
        if node not in gen_reference.TABLES:
            if str(spec.get("pkg", "")).startswith("rlstack_"):
                problems.append(f"{node}: no parameter table (tools/gen_reference.py TABLES)")
            continue
        file_values, explicit = {}, {}
        for item in spec.get("param") or []:
            if "from" in item:
                name = item["from"].rsplit("/", 1)[-1]
                for values in load_params_yaml(str(PARAMS / name)).items():
                    file_values.update(values[1])
                continue
            value = str(item["value"])
            via = re.fullmatch(r"\$\(var (\w+)\)", value)
            if via and (args.get(via.group(1)) is None or "$(" in str(args[via.group(1)])):
                continue   # a required argument, or one found at launch time (a share path): nothing to compare
            text = str(args[via.group(1)]) if via else value
            explicit[item["name"]] = (yaml.safe_load(text) if text else "", bool(via))   # as ROS 2 launch reads it
        table = gen_reference.table(node)
        defaults = {p.name: p.default for p in table}
        problems += [f"{node}: {p}" for p in check_values(table, {n: v for n, (v, _) in explicit.items()})]
        for name, (value, via_arg) in explicit.items():
            restated = file_values.get(name, defaults.get(name))
            if via_arg and name in defaults and value != restated \
                    and name not in LAUNCH_OVERRIDES.get(path.name, set()):
                problems.append(f"{node}: argument default {name} = {value!r}, the params file / table "
                                f"says {restated!r}")
    assert not problems, f"{path.name}: " + "; ".join(problems)


@pytest.mark.parametrize("node", sorted(gen_reference.TABLES))
def test_reference_docs_show_the_table(node):
    """docs/reference/ has the node's generated parameter table, current (tools/gen_reference.py writes it)."""
    pages = [p for p in (REPO / "docs" / "reference").glob("*.md")
             if f"<!-- generated: params {node} -->" in p.read_text()]
    assert len(pages) == 1, f"{node}: {len(pages)} generated parameter tables in docs/reference (want one)"
    text = pages[0].read_text()
    block = text.split(f"<!-- generated: params {node} -->\n", 1)[1].split("<!-- end generated -->", 1)[0]
    assert block == gen_reference.params_table(node), (f"{pages[0].name}: the {node} table is stale "
                                                       "(python tools/gen_reference.py)")
