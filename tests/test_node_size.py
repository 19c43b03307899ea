"""Node modules stay small: a ROS node is a thin adapter (parameters, topics, timers), its algorithm lives in a core.

A node module is a Python module of a package under ros2_ws/src/ (tests left out) that defines an rclpy
``Node`` (or ``LifecycleNode``) subclass, or whose ``main`` creates a node. Each is at most
``MAX_LINES`` lines. The modules over it today are listed in ``CEILINGS`` with their length as a
ceiling: they may shrink, never grow; one at or under ``MAX_LINES`` is reported (a warning) so it can
leave the list.
"""

from __future__ import annotations

import ast
import sys
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "ros2_ws" / "src"
MAX_LINES = 400
#: node modules over MAX_LINES today -> their length as a ceiling (only shrinks)
CEILINGS: dict[str, int] = {}
NODE_CLASSES = {"Node", "LifecycleNode"}
NODE_FACTORIES = NODE_CLASSES | {"create_node"}


def _name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def is_node_module(source: str) -> bool:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(_name(b) in NODE_CLASSES for b in node.bases):
            return True
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "main":
            if any(isinstance(c, ast.Call) and _name(c.func) in NODE_FACTORIES for c in ast.walk(fn)):
                return True
    return False


def node_modules() -> dict[str, int]:
    """package-relative path -> line count, for every node module under ros2_ws/src/*/."""
    found = {}
    for path in sorted(SRC.glob("*/*/**/*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[1] == "test" or rel.name == "setup.py":
            continue
        text = path.read_text()
        if is_node_module(text):
            found[rel.as_posix()] = len(text.splitlines())
    return found


def test_the_scan_finds_the_nodes():
    found = node_modules()
    assert {"rlstack_nav/rlstack_nav/nav_node.py", "rlstack_mission/rlstack_mission/mission_node.py",
            "rlstack_policy/rlstack_policy/policy_node.py", "rlstack_sim/rlstack_sim/bridge_node.py",
            "rlstack_smoke/rlstack_smoke/talker_node.py"} <= set(found), sorted(found)
    assert is_node_module("from rclpy.node import Node\nclass A(Node):\n    pass\n")
    assert is_node_module("import rclpy\ndef main():\n    node = rclpy.create_node('x')\n")
    assert not is_node_module("def main():\n    return 0\n")


def test_node_modules_stay_within_their_size():
    found = node_modules()
    over = [f"{rel}: {n} lines (limit {MAX_LINES}): move code out of the node into its core"
            for rel, n in sorted(found.items()) if n > MAX_LINES and rel not in CEILINGS]
    grown = [f"{rel}: {found[rel]} lines, over its ceiling {ceiling}: it may only shrink"
             for rel, ceiling in sorted(CEILINGS.items()) if rel in found and found[rel] > ceiling]
    gone = [f"{rel}: listed in CEILINGS but not a node module (moved or removed): drop it from the list"
            for rel in sorted(CEILINGS) if rel not in found]
    assert not (over or grown or gone), "\n".join(over + grown + gone)
    for rel, ceiling in sorted(CEILINGS.items()):
        if found[rel] <= MAX_LINES:
            warnings.warn(f"{rel}: {found[rel]} lines, within {MAX_LINES}: it can leave CEILINGS in "
                          f"tests/test_node_size.py", stacklevel=1)
        elif found[rel] < ceiling:
            warnings.warn(f"{rel}: {found[rel]} lines, its ceiling can go down from {ceiling}", stacklevel=1)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
