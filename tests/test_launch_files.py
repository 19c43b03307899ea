"""Every launch file in launch/ names packages, executables and params files that exist.

This is the static check users get from `python -m rlstack_launch FILE --check`; running it
over all files here means a renamed executable or a moved params file fails CI, not a user.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from rlstack_launch import check_launch_file, load_launch_file

LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.yaml"))


def test_there_are_launch_files():
    assert LAUNCH_FILES, "launch/ holds no *.launch.yaml"


@pytest.mark.parametrize("launch_file", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_resolves(launch_file):
    assert check_launch_file(str(launch_file), {}) == []
    for spec in load_launch_file(str(launch_file), {}):
        assert spec.exe_path and spec.required is not None
        for entry in spec.params:
            if entry[0] == "file":
                assert Path(entry[1]).is_file()


def _runs(launch_files):
    """(file, args) pairs: each file with its defaults, and with sim:=false where it declares sim."""
    from rlstack_launch import load

    runs = []
    for path in launch_files:
        runs.append((path, []))
        if "sim" in load(str(path), {}).declared:
            runs.append((path, ["sim:=false"]))
    return runs


@pytest.mark.parametrize("launch_file, args", _runs(LAUNCH_FILES),
                         ids=lambda v: v.name if isinstance(v, Path) else " ".join(v) or "defaults")
def test_launch_file_passes_the_runner_check(launch_file, args):
    """`python -m rlstack_launch FILE --check` (the runner reads attribute types, entities and
    substitutions as strictly as `ros2 launch`), by path and as `rlstack_bringup FILE` from the
    installed share directory, with the defaults and with sim:=false where the file has it."""
    for target in ([str(launch_file)], ["rlstack_bringup", launch_file.name]):
        result = subprocess.run([sys.executable, "-m", "rlstack_launch", *target, *args, "--check"],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("rlstack_launch: ok: "), result.stdout
        assert result.stderr == "", result.stderr   # no warnings either


@pytest.mark.parametrize("params_file", sorted((REPO / "launch" / "params").glob("*.yaml")), ids=lambda p: p.name)
def test_params_files_are_ros_params_yaml(params_file):
    data = yaml.safe_load(params_file.read_text())
    assert isinstance(data, dict) and data
    for node_key, section in data.items():
        assert set(section) == {"ros__parameters"}, \
            f"{params_file.name}: {node_key} has keys other than ros__parameters"
        assert isinstance(section["ros__parameters"], dict)


def test_check_reports_a_missing_executable_in_one_line(tmp_path):
    bad = tmp_path / "bad.launch.yaml"
    bad.write_text("launch:\n  - node: {pkg: rlstack_smoke, exec: no_such_node, name: x}\n")
    result = subprocess.run([sys.executable, "-m", "rlstack_launch", str(bad), "--check"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no_such_node" in lines[0] and lines[0].startswith("rlstack_launch: error:")
    assert "Traceback" not in result.stderr


def _params(launch_file, args, node):
    spec = next(s for s in load_launch_file(str(REPO / "launch" / launch_file), args) if s.name == node)
    return {e[1]: e[2] for e in spec.params if e[0] == "param"}


@pytest.mark.parametrize("args", [{}, {"robot_mode": "false"}], ids=["robot_mode", "ground_truth_ablation"])
def test_the_fetch_graph_has_depth_noise_on_by_default(args):
    """A robot's camera is not exact: the fetch graph's bridge publishes noisy depth unless
    asked not to, and navigation widens its floor and wall thresholds to match. The ablation keeps
    the noise, so that it differs from robot mode only in where the grasp pose comes from."""
    assert _params("fetch.launch.yaml", args, "sim_bridge")["depth_noise"] == "true"
    nav = _params("fetch.launch.yaml", args, "nav_controller")
    assert float(nav["floor_noise_per_m2"]) > 0 and float(nav["static_noise_per_m2"]) > 0
    off = {**args, "depth_noise": "false"}
    assert _params("fetch.launch.yaml", off, "sim_bridge")["depth_noise"] == "false"
    assert float(_params("fetch.launch.yaml", off, "nav_controller")["floor_noise_per_m2"]) == 0
    from rlstack_nav.obstacles import NOISY_DEPTH_ALLOWANCES  # the offline evaluations use the same figures
    assert {k: float(nav[k]) for k in NOISY_DEPTH_ALLOWANCES} == NOISY_DEPTH_ALLOWANCES


@pytest.mark.parametrize("args", [{}, {"robot_mode": "false"}], ids=["robot_mode", "ground_truth_ablation"])
def test_the_fetch_graph_runs_with_drifting_odometry_and_the_localiser_by_default(args):
    """A robot's odometry drifts: by default the bridge integrates /odom from the wheels
    with drift, the localiser publishes map -> odom, navigation reads it from /tf instead of
    publishing an identity, and the semantic map stores positions in map (odom slides away from the
    world). localization:=false gives the sim's exact odometry and navigation's identity map -> odom."""
    on = args
    names = [s.name for s in load_launch_file(str(REPO / "launch" / "fetch.launch.yaml"), on)]
    assert "localizer" in names
    assert _params("fetch.launch.yaml", on, "sim_bridge")["wheel_odometry"] == "true"
    assert _params("fetch.launch.yaml", on, "nav_controller")["publish_map_to_odom"] == "false"
    assert _params("fetch.launch.yaml", on, "semantic_map")["map_frame"] == "map"
    off = {**args, "localization": "false"}
    assert "localizer" not in [s.name for s in load_launch_file(str(REPO / "launch" / "fetch.launch.yaml"), off)]
    assert _params("fetch.launch.yaml", off, "sim_bridge")["wheel_odometry"] == "false"
    assert _params("fetch.launch.yaml", off, "nav_controller")["publish_map_to_odom"] == "true"
    # the identity map -> odom: same frame
    assert _params("fetch.launch.yaml", off, "semantic_map")["map_frame"] == "map"


def test_the_fetch_graph_takes_the_simulator_backend():
    """``backend:=mujoco`` runs the same fetch graph on MuJoCo (the bridge's home scene on the
    other engine); PyBullet stays the default. The evaluator's --backend passes it through."""
    assert _params("fetch.launch.yaml", {}, "sim_bridge")["backend"] == "pybullet"
    assert _params("fetch.launch.yaml", {"backend": "mujoco"}, "sim_bridge")["backend"] == "mujoco"
    import argparse

    from rlstack_mission.evaluate import _graph_args

    ns = argparse.Namespace(ground_truth_grasp=False, backend="mujoco", graph_arg=[], kind="cube")
    assert _graph_args(ns, argparse.ArgumentParser())["backend"] == "mujoco"


def test_the_fetch_graph_takes_the_scene_and_other_kinds_run_on_home_kinds():
    """``fetch.launch.yaml scene:=home_kinds`` (home's rooms and objects, one object of every
    other kind); the evaluator's --kind lego runs the graph there, a cube stays in home."""
    import argparse

    from rlstack_mission.evaluate import _graph_args

    assert _params("fetch.launch.yaml", {}, "sim_bridge")["scene"] == "home"
    assert _params("fetch.launch.yaml", {"scene": "home_kinds"}, "sim_bridge")["scene"] == "home_kinds"
    args = lambda kind: argparse.Namespace(ground_truth_grasp=False, backend="pybullet", graph_arg=[], kind=kind)  # noqa: E731
    assert _graph_args(args("lego"), argparse.ArgumentParser())["scene"] == "home_kinds"
    assert "scene" not in _graph_args(args("cube"), argparse.ArgumentParser())


def test_the_arm_step_period_reaches_the_bridge_and_the_mujoco_evaluation_sets_it():
    """The simulated arm spreads each /arm/ee_delta step over arm_step_period_s (bridge parameter
    ee_step_period_s): 0 (one control period) by default, 0.05 in the MuJoCo evaluation, where the
    60 Hz bridge's 16.7 ms arm jerks dropped held cubes (tools/probes/stow_rate_check.py)."""
    import argparse

    from rlstack_mission.evaluate import _graph_args

    assert float(_params("fetch.launch.yaml", {}, "sim_bridge")["ee_step_period_s"]) == 0.0
    assert float(_params("fetch.launch.yaml", {"arm_step_period_s": "0.05"}, "sim_bridge")["ee_step_period_s"]) == 0.05
    mujoco = _graph_args(argparse.Namespace(ground_truth_grasp=False, backend="mujoco", graph_arg=[], kind="cube"),
                         argparse.ArgumentParser())
    assert mujoco["arm_step_period_s"] == "0.05"
    pybullet = _graph_args(argparse.Namespace(ground_truth_grasp=False, backend="pybullet", graph_arg=[], kind="cube"),
                           argparse.ArgumentParser())
    assert "arm_step_period_s" not in pybullet
    given = _graph_args(argparse.Namespace(ground_truth_grasp=False, backend="mujoco", kind="cube",
                                           graph_arg=["arm_step_period_s:=0"]), argparse.ArgumentParser())
    assert given["arm_step_period_s"] == "0"
