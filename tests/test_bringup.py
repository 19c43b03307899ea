"""rlstack_bringup: the launch files, params files, rviz configs, maps and bundles installed into one
package share, found by $(find-pkg-share rlstack_bringup); use_sim_time follows sim; the robot
bring-up (launch/robot.launch.yaml) is wall-clock time and simulator-free."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import REPO

from rlstack_launch import load

LAUNCH = REPO / "launch"
LAUNCH_FILES = sorted(LAUNCH.glob("*.launch.yaml"))
SHARED = ("launch", "launch/params", "config/rviz", "maps", "policies")
#: nodes of the simulator side: never in the robot bring-up
SIM_PACKAGES = {"rlstack_sim", "rlstack_learning", "sim_bridges"}


def _share() -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory("rlstack_bringup"))


def _use_sim_time(spec) -> str | None:
    """The node's use_sim_time as the launch file sets it (the params files never set it: test below)."""
    value = None
    for entry in spec.params:
        if entry[0] == "param" and entry[1] == "use_sim_time":
            value = str(entry[2]).lower()
    return value


@pytest.mark.parametrize("folder", SHARED)
def test_the_share_holds_every_shipped_file(folder):
    share = _share()
    shipped = {p.relative_to(REPO / folder) for p in (REPO / folder).rglob("*") if p.is_file()}
    installed = {p.relative_to(share / folder) for p in (share / folder).rglob("*") if p.is_file()}
    assert shipped and shipped <= installed, f"not installed (rebuild: make setup): {sorted(shipped - installed)[:5]}"


@pytest.mark.parametrize("launch_file", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_files_find_files_through_the_package_share(launch_file):
    text = launch_file.read_text()
    assert "$(dirname)" not in text, "use $(find-pkg-share rlstack_bringup)/... so the installed file works"


@pytest.mark.parametrize("launch_file", LAUNCH_FILES, ids=lambda p: p.name)
def test_the_package_form_loads_the_same_graph_as_the_source_path(launch_file):
    from_source = load(str(launch_file), {})
    from_share = load(str(_share() / "launch" / launch_file.name), {})
    assert from_source.problems == from_share.problems == []
    assert [s.command() for s in from_source.nodes] == [s.command() for s in from_share.nodes]


def test_no_params_file_forces_use_sim_time():
    for path in sorted((LAUNCH / "params").glob("*.yaml")):
        for section in yaml.safe_load(path.read_text()).values():
            assert "use_sim_time" not in section["ros__parameters"], f"{path.name} sets use_sim_time"


@pytest.mark.parametrize("launch_file", [f for f in LAUNCH_FILES if "sim" in load(str(f), {}).declared],
                         ids=lambda p: p.name)
def test_sim_false_means_wall_clock_time(launch_file):
    with_sim = load(str(launch_file), {})
    without = load(str(launch_file), {"sim": "false"})
    assert without.problems == [] and without.nodes
    assert {_use_sim_time(s) for s in with_sim.nodes if s.package not in SIM_PACKAGES} == {"true"}
    assert {_use_sim_time(s) for s in without.nodes} == {"false"}
    assert not {s.package for s in without.nodes} & SIM_PACKAGES


def test_robot_bringup_is_wall_clock_and_reads_no_simulator_truth():
    result = load(str(LAUNCH / "robot.launch.yaml"), {})
    assert result.problems == []
    names = {s.name for s in result.nodes}
    assert {"localizer", "semantic_map", "grasp_pose", "nav_controller", "policy_node", "mission",
            "twist_stamper", "arm_adapter", "robot_state_publisher"} <= names
    for spec in result.nodes:
        assert spec.package not in SIM_PACKAGES, spec.name
        assert _use_sim_time(spec) == "false", spec.name
        assert "sim_ground_truth" not in " ".join(spec.command()), spec.name


def test_fetch_graph_is_the_simulator_plus_the_robot_bringup():
    robot = {s.name for s in load(str(LAUNCH / "robot.launch.yaml"), {"adapters": "false"}).nodes}
    fetch = {s.name for s in load(str(LAUNCH / "fetch.launch.yaml"), {}).nodes}
    assert fetch == robot | {"sim_bridge"}
