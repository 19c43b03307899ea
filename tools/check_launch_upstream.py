#!/usr/bin/env python3
"""Load launch files with ROS 2's own ``launch`` / ``launch_ros`` and report what it refuses.

Needs an importable upstream ``launch`` (a ROS 2 distribution, or the prefix that
``tools/install_ros2_launch.sh`` builds). For each file it does what ``ros2 launch`` does before
any process starts:

1. parses the file with upstream's frontend (``launch_yaml``), one top-level entry at a time, so
   every entry's attribute-type errors are listed (``Attribute 'x' of Entity 'node' expected to
   be of type ...``), not only the first;
2. visits the description with a ``LaunchContext`` holding the launch arguments: arguments are
   declared, ``let``, ``group``, ``include`` and ``push-ros-namespace`` run, conditions are
   evaluated, and every enabled node has its substitutions performed and its process prepared
   (name, namespace, parameters, remaps, executable, ``respawn`` as a bool) -- but nothing is
   started. The visit stops at the first error, as ``ros2 launch`` does.

Prints one line per file and argument set: ``ok: FILE [args]`` or ``error: FILE [args]: ...``
(one line per error). Files that declare a ``sim`` argument are checked a second time with
``sim:=false``. Exit status 0 when every file is ok, 1 otherwise, 2 when ``launch`` is missing.

    source env.sh && source /path/to/ros2_upstream/env.sh
    python tools/check_launch_upstream.py                   # every launch/*.launch.yaml
    python tools/check_launch_upstream.py FILE [name:=value ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"


def _parse_errors(path: str) -> List[str]:
    """Parse each top-level entry on its own with upstream's parser; return the errors."""
    import yaml
    from launch.frontend import Parser
    from launch_yaml import Entity

    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or "launch" not in data:
        return ["RuntimeError: Expected 'launch' as root tag"]
    # The line of each top-level entry, for messages.
    root = yaml.compose(text)
    lines = [len(text)] * len(data["launch"] or [])
    for key, value in root.value:
        if key.value == "launch" and isinstance(value, yaml.SequenceNode):
            lines = [item.start_mark.line + 1 for item in value.value]
    parser = Parser()
    errors = []
    for index, child in enumerate(data["launch"] or []):
        try:
            if not isinstance(child, dict) or len(child) != 1:
                raise RuntimeError(
                    "Subentities must be a dictionary with only one key, which is the entity type")
            type_name = next(iter(child))
            parser.parse_action(Entity(child[type_name], type_name))
        except Exception as exc:  # noqa: BLE001 (upstream raises many kinds; report them all)
            errors.append(f"line {lines[index]}: {_one_line(exc)}")
    return errors


def _visit(entity, context) -> None:
    """Visit like LaunchService would, preparing nodes and processes instead of starting them."""
    from launch.actions import ExecuteLocal
    from launch_ros.actions import Node

    if isinstance(entity, ExecuteLocal):
        condition = getattr(entity, "condition", None)
        if condition is not None and not condition.evaluate(context):
            return
        if isinstance(entity, Node):
            entity._perform_substitutions(context)  # noqa: SLF001 (what Node.execute runs first)
            ros_args: Dict[str, str] = {}
            if entity._Node__node_name is not None:  # noqa: SLF001
                ros_args["name"] = f"__node:={entity._Node__expanded_node_name}"  # noqa: SLF001
            if entity.expanded_node_namespace != "":
                ros_args["ns"] = f"__ns:={entity.expanded_node_namespace}"
            context.extend_locals({"ros_specific_arguments": ros_args})
        entity.prepare(context)
        return
    children = entity.visit(context)
    for child in children or []:
        _visit(child, context)


def check_file(path: str, args: Dict[str, str]) -> List[str]:
    """Return upstream's errors for ``path`` with launch arguments ``args`` ([] when ok)."""
    errors = _parse_errors(path)
    if errors:
        return errors
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import AnyLaunchDescriptionSource

    from launch import LaunchContext, LaunchDescription

    loop = asyncio.new_event_loop()
    try:
        context = LaunchContext()
        context._set_asyncio_loop(loop)  # noqa: SLF001 (as LaunchService does)
        context.launch_configurations.update(args)
        top = LaunchDescription([IncludeLaunchDescription(AnyLaunchDescriptionSource(path))])
        try:
            _visit(top, context)
        except Exception as exc:  # noqa: BLE001
            return [_one_line(exc)]
    finally:
        loop.close()
    return []


def _declares_sim(path: str) -> bool:
    import yaml

    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    for entry in data.get("launch") or []:
        if isinstance(entry, dict) and isinstance(entry.get("arg"), dict):
            if entry["arg"].get("name") == "sim":
                return True
    return False


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("items", nargs="*", metavar="FILE | name:=value",
                        help="launch files (default: every launch/*.launch.yaml of the repo) "
                        "and launch arguments")
    options = parser.parse_args(argv)
    try:
        import launch_ros  # noqa: F401
        import launch_yaml  # noqa: F401

        import launch  # noqa: F401
    except ImportError as exc:
        print(f"check_launch_upstream: error: upstream launch is not importable ({exc}); "
              "source a ROS 2 distribution or the prefix tools/install_ros2_launch.sh builds",
              file=sys.stderr)
        return 2
    import logging

    import launch.logging

    launch.logging.launch_config.level = logging.CRITICAL  # errors are printed here, once
    files = [item for item in options.items if ":=" not in item]
    given = dict(item.split(":=", 1) for item in options.items if ":=" in item)
    runs = []
    for path in files or sorted(str(p) for p in (REPO / "launch").glob("*.launch.yaml")):
        runs.append((path, dict(given)))
        if not files and _declares_sim(path):
            runs.append((path, {**given, "sim": "false"}))
    failed = 0
    # launch_ros writes each node's {name, value} params to a temporary file; keep them here.
    scratch = tempfile.TemporaryDirectory(prefix="check_launch_upstream-")
    tempfile.tempdir = scratch.name
    for path, args in runs:
        shown = os.path.relpath(path) + "".join(f" {k}:={v}" for k, v in args.items())
        errors = check_file(path, args)
        if not errors:
            print(f"ok: {shown}")
        for error in errors:
            print(f"error: {shown}: {error}")
        failed += bool(errors)
    tempfile.tempdir = None
    scratch.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
