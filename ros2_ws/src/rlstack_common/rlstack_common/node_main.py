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
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node


def make_executor():
    if os.environ.get("RLSTACK_EXECUTOR", "events") == "single":
        return SingleThreadedExecutor()
    from rclpy.experimental import EventsExecutor

    return EventsExecutor()


def run_node(factory: Callable[[], Node], args: list[str] | None = None) -> int:
    """Create the node with ``factory`` and spin it until shutdown; return the exit code.

    SIGINT/SIGTERM end the node with exit code 0. A parameter outside its declared range or
    another error while constructing the node prints one line and exits 2.
    """
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
