"""The robot side runs without the workstation side.

A robot's computer runs perception, navigation, the policy node and the mission with the
robot-side install (``make setup ROBOT=1``, requirements/robot.txt): no torch, Stable-Baselines3,
Gymnasium, PyBullet, onnx, the simulator or the training package. Here those modules are made
unimportable in the child processes (a ``sys.meta_path`` finder installed by a
``sitecustomize`` on ``PYTHONPATH``: exactly what "not installed" looks like to Python), and

* every robot-side module, every robot-side node entry point included, imports, and none of
  them even *tries* to import a blocked module (each attempt is logged);
* the real policy node serves the shipped cart-pole bundle (``policies/cartpole``) over ROS:
  a leaning pole makes it push, and its process never tried a blocked import.

The static rule behind it: no package imports another package's modules in a cycle
(``tools/import_cycles.py``), and robot-side packages import nothing from the workstation
side (the AST check below); the bundle package ``rlstack_bundle`` is the one seam.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

REPO = Path(__file__).resolve().parents[1]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: which code is on the robot side (tools/robot_side.py: BLOCKED, ROBOT_PACKAGES, WORKSTATION_MODULES)
ROBOT = _tool("robot_side")
BLOCKED = ROBOT.BLOCKED

SITECUSTOMIZE = textwrap.dedent('''
    """Test-only: the workstation-side modules are not installed (tests/test_robot_side.py)."""
    import importlib.abc
    import os
    import sys

    _BLOCKED = frozenset(os.environ["RLSTACK_BLOCKED_MODULES"].split(","))
    _LOG = os.environ.get("RLSTACK_BLOCKED_LOG")


    class _NotOnTheRobot(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] not in _BLOCKED:
                return None
            if _LOG:
                with open(_LOG, "a") as f:
                    f.write(f"{os.getpid()} {name}\\n")
            raise ModuleNotFoundError(f"No module named {name!r} (not installed on the robot)", name=name)


    sys.meta_path.insert(0, _NotOnTheRobot())
''')


def robot_env(tmp_path: Path) -> dict:
    """The environment variables that make a child process see a robot install."""
    site = tmp_path / "robot_site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": f"{site}:{path}" if path else str(site),
            "RLSTACK_BLOCKED_MODULES": ",".join(BLOCKED),
            "RLSTACK_BLOCKED_LOG": str(tmp_path / "blocked_imports.log")}


def blocked_attempts(tmp_path: Path) -> list:
    log = tmp_path / "blocked_imports.log"
    return log.read_text().splitlines() if log.exists() else []


# ----------------------------------------------------------------------------- static
def test_no_import_cycles_in_any_package():
    tool = _tool("import_cycles")
    dirs = tool.package_dirs(REPO)
    assert {d.name for d in dirs} >= {"rlstack_bundle", "rlstack_learning", "rlstack_policy", "rlstack_mission",
                                      "rlstack_sim", "sim_bridges"}
    found = {d.name: tool.cycles(tool.module_graph(d)) for d in dirs}
    assert {k: v for k, v in found.items() if v} == {}
    # the checker does find a cycle when there is one
    assert tool.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_robot_side_sources_import_nothing_from_the_workstation_side():
    bad = []
    for name in ROBOT.robot_modules():
        for node in ast.walk(ast.parse(ROBOT.module_path(name).read_text())):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and not node.level and node.module else []
            bad += [f"{name} imports {m}" for m in mods if m.split(".")[0] in BLOCKED]
    assert bad == []
    eps = ROBOT.entry_points()
    assert {"rlstack_policy.policy_node:main", "rlstack_nav.nav_node:main", "rlstack_perception.node:main",
            "rlstack_mission.mission_node:main"} <= set(eps), eps


# ----------------------------------------------------------------------------- processes
IMPORT_ALL = textwrap.dedent("""
    import importlib.util, sys
    try:
        import torch  # noqa: F401
        print("BLOCKER-INEFFECTIVE")
    except ModuleNotFoundError:
        pass
    spec = importlib.util.spec_from_file_location("robot_side", sys.argv[1])
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    print("FAILED", tool.import_all(tool.robot_modules(), tool.entry_points()))
    print("LOADED", sorted(m for m in sys.modules if m.partition(".")[0] in tool.BLOCKED))
""")


def test_every_robot_side_module_imports_without_the_workstation_side(tmp_path):
    modules = ROBOT.robot_modules()
    assert "rlstack_policy.policy_node" in modules and "rlstack_mission.mission_node" in modules
    out = subprocess.run([sys.executable, "-c", IMPORT_ALL, str(REPO / "tools" / "robot_side.py")],
                         env={**os.environ, **robot_env(tmp_path)}, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0 and "BLOCKER-INEFFECTIVE" not in out.stdout, text
    lines = dict(ln.split(" ", 1) for ln in out.stdout.splitlines() if ln.startswith(("FAILED", "LOADED")))
    assert lines["FAILED"] == "[]", text
    assert lines["LOADED"] == "[]", text
    # the one attempt is the probe above; no robot-side module even tried
    assert [a.split(" ", 1)[1] for a in blocked_attempts(tmp_path)] == ["torch"]


class FakeCartPole:
    """Publishes cart-pole joint states at ~60 Hz, the pole leaning +0.05 rad."""

    def __init__(self, probe):
        self.pub = probe.publisher("/joint_states", JointState)
        self.timer = probe.node.create_timer(1 / 60, self._tick)

    def _tick(self):
        self.pub.publish(JointState(name=["slider_to_cart", "cart_to_pole"], position=[0.0, 0.05],
                                    velocity=[0.0, 0.0]))


def test_every_shipped_bundle_acts_in_the_robot_check():
    """tools/robot_side.py's bundle check: every bundle in policies/ loads and acts, the pixel policy
    with its image input too (it was fed the state vector alone and reported a problem)."""
    lines, problems = ROBOT.check_bundles()
    assert problems == []
    names = {p.name for p in (REPO / "policies").iterdir() if (p / "io.yaml").is_file()}
    assert {line.split(":")[0].split()[1] for line in lines} == names and "ball_plate_pixels" in names


def test_policy_node_serves_a_bundle_without_the_workstation_side(ros_processes, ros_probe, params_dir, tmp_path):
    ros_processes.extra_env.update(robot_env(tmp_path))
    node = ros_processes.start_node(
        "rlstack_policy", "policy_node", params_file=params_dir / "policy_cartpole.yaml",
        params={"bundle_path": str(REPO / "policies" / "cartpole"), "use_sim_time": False, "trigger": "timer"})
    forces = ros_probe.subscribe("/cartpole/force", Float64)
    ros_probe.wait_for_publishers("/cartpole/force", timeout=30)
    FakeCartPole(ros_probe)
    run = {"n": 0}

    def pushing():
        for m in forces.pop_all():
            run["n"] = run["n"] + 1 if m.data > 0.5 else 0
        return run["n"] >= 5

    ros_probe.spin_until(pushing, 20.0, "the policy pushing +x on a pole leaning +x")
    ros_processes.assert_all_alive()
    assert "configured: bundle" in node.log_text()
    assert blocked_attempts(tmp_path) == [], node.log_text()
