"""One way to run a node: init, spin on an events executor, and exit cleanly on Ctrl-C.

Why the EventsExecutor: on our 2-core machines it cut topic round-trip latency about 3x
against the default SingleThreadedExecutor. ``RLSTACK_EXECUTOR=single`` selects the classic
executor (for debugging, or if a node needs something the events executor lacks).

Why a ``spin_once`` loop and not ``executor.spin()``: with rclpy 9.1.2 (Kilted wheels),
``EventsExecutor.spin()`` blocked without running a single callback (timers, subscriptions
and services all stayed silent, and SIGINT was not honoured), while ``spin_once`` in a loop
runs them all and raises KeyboardInterrupt on SIGINT. Measured here; see docs/developer.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node


def make_executor():
    if os.environ.get("RLSTACK_EXECUTOR", "events") == "single":
        return SingleThreadedExecutor()
    from rclpy.experimental import EventsExecutor

    return EventsExecutor()


# The project's profiles (config/): the default one, and the small-segment variant.
_DEFAULT_PROFILE = "fastdds_shm_only.xml"
_SMALL_PROFILE = "fastdds_shm_small.xml"


def use_small_message_profile() -> None:
    """Switch this process to the 1 MiB shared-memory profile, before rclpy.init.

    Only when the project's default profile is in use (env.sh): a user's own profile is
    never replaced. See config/fastdds_shm_small.xml for why (resident memory).
    """
    current = os.environ.get("FASTDDS_DEFAULT_PROFILES_FILE", "")
    if Path(current).name == _DEFAULT_PROFILE:
        small = Path(current).with_name(_SMALL_PROFILE)
        if small.is_file():
            os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] = str(small)


def run_node(factory: Callable[[], Node], args: list[str] | None = None, *,
             small_messages: bool = False) -> int:
    """Create the node with ``factory`` and spin it until shutdown; return the exit code.

    SIGINT/SIGTERM end the node with exit code 0. A parameter outside its declared range or
    another error while constructing the node prints one line and exits 2.
    ``small_messages=True`` is for nodes that never publish large messages (no images, maps
    or point clouds): they get the 1 MiB shared-memory segment profile, about 50 MB less
    resident memory.
    """
    if small_messages:
        use_small_message_profile()
    rclpy.init(args=args)
    node = None
    try:
        node = factory()
        executor = make_executor()
        executor.add_node(node)
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.2)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except rclpy.exceptions.ParameterException as exc:  # includes out-of-range values
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
