"""Command line: ``python -m rlstack_launch LAUNCH_FILE [name:=value ...] [options]``.

Every user error is one line ``rlstack_launch: error: <what> (<what to do>)`` and exit
status 2; tracebacks are reserved for bugs in this package (and hidden unless
``RLSTACK_LAUNCH_DEBUG=1``), so CI logs show the actual problem.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Dict, List, NoReturn, Optional, Sequence

from .errors import LaunchError
from .launch_file import find_launch_file, load
from .runner import run_graph

PROG = "rlstack_launch"
EXIT_USAGE = 2


class _UsageError(Exception):
    """Bad command line; printed as one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse prints usage plus a message over several lines; keep it to one.
        raise _UsageError(f"{message} (see '{PROG} --help')")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        usage=(
            f"{PROG} [--check] [--print] [--show-args] [--grace SEC] "
            "{LAUNCH_FILE | PACKAGE FILE_NAME} [name:=value ...]"
        ),
        description=(
            "Start the nodes of a ROS 2 YAML launch file as plain processes, like "
            "`ros2 launch` would, without needing launch/launch_ros."
        ),
        epilog=(
            "examples:\n"
            "  rlstack_launch launch/smoke.launch.yaml rate_hz:=5\n"
            "  rlstack_launch rlstack_smoke smoke.launch.yaml --check\n"
            "  rlstack_launch launch/smoke.launch.yaml --print"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "launch",
        nargs="+",
        metavar="LAUNCH_FILE",
        help="a launch file path, or a package and a file name in its share directory, "
        "followed by launch arguments as name:=value",
    )
    parser.add_argument("--check", action="store_true",
                        help="resolve everything, report all problems, start nothing")
    parser.add_argument("--print", dest="print_cmds", action="store_true",
                        help="print the command line of every node and exit")
    parser.add_argument("--show-args", action="store_true",
                        help="list the launch arguments the file declares and exit")
    parser.add_argument("--grace", type=float, default=10.0, metavar="SEC",
                        help="seconds nodes get to exit after SIGINT before SIGTERM "
                        "(default: 10)")
    return parser


def _split_positionals(items: Sequence[str]) -> tuple[List[str], Dict[str, str]]:
    files: List[str] = []
    launch_args: Dict[str, str] = {}
    for item in items:
        if ":=" in item:
            name, value = item.split(":=", 1)
            if not name:
                raise _UsageError(f"'{item}' has no argument name (write name:=value)")
            launch_args[name] = value  # the last one wins, as in ros2 launch
        elif launch_args:
            raise _UsageError(
                f"'{item}' comes after the launch arguments (put the launch file first)"
            )
        else:
            files.append(item)
    return files, launch_args


def _resolve_path(files: List[str]) -> str:
    if len(files) == 1:
        return files[0]
    if len(files) == 2:
        if os.path.isfile(files[0]):
            raise _UsageError(f"expected one launch file, got {files[0]} and {files[1]}")
        return find_launch_file(files[0], files[1])
    raise _UsageError(
        f"expected LAUNCH_FILE or PACKAGE FILE_NAME, got {len(files)} names: {' '.join(files)}"
    )


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _main(argv: Optional[Sequence[str]]) -> int:
    args = _build_parser().parse_intermixed_args(argv)
    if args.grace < 0:
        raise _UsageError("--grace must be >= 0 seconds")
    files, launch_args = _split_positionals(args.launch)
    path = _resolve_path(files)
    result = load(path, launch_args)
    for warning in result.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    if args.show_args:
        if not result.declared:
            print(f"{path} declares no launch arguments")
        for info in result.declared.values():
            default = "required" if info.default is None else f"default: {info.default!r}"
            text = f"  {info.description}" if info.description else ""
            print(f"{info.name} ({default}){text}")
        return 0
    if result.problems:
        for problem in result.problems:
            _error(problem)
        return EXIT_USAGE
    if args.print_cmds:
        for spec in result.nodes:
            print(shlex.join(spec.command()))
    if args.check:
        labels = ", ".join(
            spec.label + (" (required)" if spec.required else "") for spec in result.nodes
        )
        count = len(result.nodes)
        print(f"{PROG}: ok: {path}: {count} node{'s' if count != 1 else ''}"
              + (f": {labels}" if labels else ""))
        return 0
    if args.print_cmds:
        return 0
    return run_graph(result.nodes, grace=args.grace)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``rlstack_launch`` / ``python -m rlstack_launch``; returns the exit code."""
    try:
        return _main(argv)
    except _UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except LaunchError as exc:
        for problem in exc.problems:
            _error(problem)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Only reachable before the runner installs its handlers (e.g. while loading).
        return 130
    except Exception as exc:  # noqa: BLE001 (the last resort that keeps CI logs readable)
        if os.environ.get("RLSTACK_LAUNCH_DEBUG"):
            raise
        _error(f"internal error: {type(exc).__name__}: {exc} "
               f"(rerun with RLSTACK_LAUNCH_DEBUG=1 for the traceback and report it)")
        return 1


if __name__ == "__main__":
    sys.exit(main())
