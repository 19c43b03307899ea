"""rlstack_launch: run ROS 2 YAML launch files as plain processes.

``launch``/``launch_ros`` (the ``ros2 launch`` tool) cannot be installed everywhere
node graphs need to start. This package reads the same ``*.launch.yaml`` files (the
official YAML frontend, a documented subset of it) and starts the same processes, with
the same command lines, without importing rclpy or launch.

Python API::

    from rlstack_launch import load_launch_file, check_launch_file, run_graph

    problems = check_launch_file("graph.launch.yaml", {"rate_hz": "5"})
    specs = load_launch_file("graph.launch.yaml", {"rate_hz": "5"})
    exit_code = run_graph(specs, grace=10.0)

Command line: ``python -m rlstack_launch FILE [name:=value ...] [--check] [--print]``.
"""

from .errors import LaunchError
from .launch_file import (
    ArgInfo,
    NodeSpec,
    check_launch_file,
    find_launch_file,
    load,
    load_launch_file,
)
from .params_file import load_params_file, validate_params_file
from .runner import run_graph

__all__ = [
    "ArgInfo",
    "LaunchError",
    "NodeSpec",
    "check_launch_file",
    "find_launch_file",
    "load",
    "load_launch_file",
    "load_params_file",
    "run_graph",
    "validate_params_file",
]
