#!/usr/bin/env python3
"""Which code is on the robot side, and a check of a robot-side install (docs/reference/architecture.md).

    python tools/robot_side.py            # in a robot install (make setup ROBOT=1; source env.sh)
    python tools/robot_side.py --text     # also run the text encoder (perception's default)

The check: no workstation-side module (torch, SB3, Gymnasium, PyBullet, onnx, the simulator,
training) is installed; every robot-side module and node entry point imports; every shipped
bundle in policies/ loads and acts. Exit status 1 on any problem. tests/test_robot_side.py uses
the same lists, with the workstation modules blocked in a full install.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import List, Tuple

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "ros2_ws" / "src"

#: top-level modules of the workstation side: absent from the robot install
BLOCKED = ("torch", "stable_baselines3", "sb3_contrib", "gymnasium", "pybullet", "pybullet_data", "onnx",
           "tensorboard", "sentence_transformers", "transformers", "open_clip", "segment_anything", "imageio",
           "mcap", "mcap_ros2", "sim_bridges", "rlstack_learning", "rlstack_sim", "ray", "mujoco")
#: packages that run on the robot (+ the launch runner that starts graphs there)
ROBOT_PACKAGES = ("rlstack_bundle", "rlstack_common", "rlstack_policy", "rlstack_nav", "rlstack_perception",
                  "rlstack_mission", "rlstack_launch", "rlstack_adapters", "rlstack_localization",
                  "rlstack_description")
#: modules of robot-side packages that belong to the workstation: evaluation against the
#: simulator, demo recording/video, training the crop embedder and the query head, and the optional SAM / CLIP
#: perception backends (user checkpoints on torch; the default backends need none of it)
WORKSTATION_MODULES = frozenset({
    "rlstack_common.ray_cluster", "rlstack_nav.evaluate", "rlstack_nav.home_map", "rlstack_localization.evaluate",
    "rlstack_perception.evaluate", "rlstack_perception.evaluate_grasp_pose", "rlstack_perception.simtools",
    "rlstack_perception.train_embedder", "rlstack_perception.train_query_head",
    "rlstack_perception.backends.sam", "rlstack_perception.backends.clip",
    "rlstack_perception.backends._torchvision_compat",
    "rlstack_mission.evaluate", "rlstack_mission.harness", "rlstack_mission.layouts", "rlstack_mission.overhead",
    "rlstack_mission.recording", "rlstack_mission.video", "rlstack_mission.fault_injection", "rlstack_mission.soak",
})


def robot_modules(src: Path = SRC) -> List[str]:
    """Every module of the robot-side packages, less the workstation tools among them."""
    out = []
    for pkg in ROBOT_PACKAGES:
        root = src / pkg
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join(parts)
            if name not in WORKSTATION_MODULES:
                out.append(name)
    return out


def module_path(name: str, src: Path = SRC) -> Path:
    pkg = name.split(".")[0]
    path = src / pkg / (name.replace(".", "/") + ".py")
    return path if path.exists() else src / pkg / name.replace(".", "/") / "__init__.py"


def entry_points(src: Path = SRC) -> List[str]:
    """``module:function`` of every console script of the robot-side packages (the nodes), less
    the workstation tools (``make_home_map`` builds the map from the simulator's scene)."""
    out = []
    for pkg in ROBOT_PACKAGES:
        tree = ast.parse((src / pkg / "setup.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and " = " in node.value \
                    and ":" in node.value:
                target = node.value.split(" = ", 1)[1].strip()
                if target.partition(":")[0] not in WORKSTATION_MODULES:
                    out.append(target)
    return out


def import_all(modules: List[str], eps: List[str]) -> List[str]:
    """Import every module and check every entry point is a function; the problems found."""
    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    for ep in eps:
        mod, _, fn = ep.partition(":")
        if not callable(getattr(sys.modules.get(mod), fn, None)):
            failed.append(f"entry point {ep} is not a function")
    return failed


def check_bundles() -> Tuple[List[str], List[str]]:
    """Load every shipped bundle in policies/ and act once on zero observations (black frames for a
    pixel policy's image inputs): (one line per bundle, problems)."""
    import numpy as np

    from rlstack_bundle.bundle import load

    lines, problems = [], []
    for path in sorted(p for p in (REPO / "policies").iterdir() if (p / "io.yaml").is_file()):
        try:
            b = load(str(path))
            images = {s.input: np.zeros(s.input_shape, np.uint8) for s in b.image_specs}
            action = b.act(np.zeros(b.obs_dim, np.float32), images)
            lines.append(f"bundle {path.name}: command on zeros {np.round(b.command(action), 3).tolist()}")
        except Exception as exc:  # noqa: BLE001 - reported as a problem of this bundle
            problems.append(f"bundle {path.name}: {exc}")
    return lines, problems


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", action="store_true", help="also embed a query with perception's text encoder")
    args = parser.parse_args(argv)
    problems = [f"workstation module installed: {m}" for m in BLOCKED if importlib.util.find_spec(m) is not None]
    modules, eps = robot_modules(), entry_points()
    problems += import_all(modules, eps)
    print(f"imported {len(modules)} robot-side modules, {len(eps)} node entry points")
    lines, failed = check_bundles()
    print("\n".join(lines))
    problems += failed
    if args.text:
        import numpy as np

        from rlstack_perception.embed import LABELS, TextEncoder

        enc = TextEncoder()
        q = enc.encode(["the yellow cube"])[0]
        best = LABELS[int(np.argmax(enc.prototypes(LABELS) @ q))]
        print(f"text encoder ({enc.backend}): 'the yellow cube' -> {best}")
        if best != "yellow cube":
            problems.append(f"text encoder ranks '{best}' first for 'the yellow cube'")
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
    problems += [f"workstation module loaded: {m}" for m in loaded]
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    print("robot side: ok" if not problems else f"robot side: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
