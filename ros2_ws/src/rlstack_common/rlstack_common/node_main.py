"""One way to run a node: init, spin on an events executor, and stop cleanly on SIGINT/SIGTERM.

Why the EventsExecutor: on our 2-core machines it cut topic round-trip latency about 3x
against the default SingleThreadedExecutor. ``RLSTACK_EXECUTOR=single`` selects the classic
executor (for debugging, or if a node needs something the events executor lacks).

Why a ``spin_once`` loop and not ``executor.spin()``: with rclpy 9.1.2 (Kilted wheels),
``EventsExecutor.spin()`` blocked without running a single callback (timers, subscriptions
and services all stayed silent, and SIGINT was not honoured), while ``spin_once`` in a loop
runs them all. Measured here; see docs/developer.md.

Why our own signal handlers (``SignalHandlerOptions.NO``): rclpy's handler shuts the context
down and then raises ``KeyboardInterrupt`` wherever Python happens to be, which is often inside
a callback: the bridge died in ``getCameraImage`` with ``[FATAL] Exception in 'timers'
callback`` and then published on an invalid context, and a mission in the middle of a fetch
left its action thread running against a destroyed node. Here SIGINT and SIGTERM only set a
flag; the spin loop sees it between callbacks (within ``_POLL_S``), asks the node to wind
down (:meth:`ShutdownAware.request_shutdown`: e.g. the mission stops the base and ends its
goal), keeps spinning until the node says it is done or ``drain_s`` passes, then destroys the
node and shuts rclpy down. The process exits 0, as ``ros2 launch`` and our runner expect.
``ros2 launch`` sends SIGINT to the process group and then again itself; a second signal
during the drain is harmless.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

#: how often the spin loop looks at the stop flag, s (a callback in progress finishes first)
_POLL_S = 0.1


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


class StopFlag:
    """SIGINT/SIGTERM set a flag instead of raising in whatever code is running.

    Use as a context manager around the node's life. The previous handlers come back on exit
    only if no signal came. Once one did, the process is going down, and further SIGINT/SIGTERM
    are ignored from then on: a second SIGINT (the terminal's, then the launcher's) arriving
    during interpreter finalization, after CPython has reset its handlers to SIG_DFL, killed
    the policy node "by SIGINT" instead of letting it exit 0. (SIGKILL still ends a process
    that hangs there.)
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: Optional[int] = None
        self._previous: dict = {}

    def _handle(self, signum: int, _frame: object) -> None:
        self.signal = self.signal or signum
        self.event.set()

    def __enter__(self) -> "StopFlag":
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.event.is_set():
            for sig in self._previous:
                signal.signal(sig, signal.SIG_IGN)
            return
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def is_set(self) -> bool:
        return self.event.is_set()


def spin_until_stopped(node: Node, executor: Executor, stop: StopFlag, drain_s: float = 5.0) -> None:
    """Spin until ``stop`` is set (or rclpy shuts down), then let the node wind down.

    A node may offer ``request_shutdown()`` (called once, on the spin thread) and
    ``shutdown_pending() -> bool`` (spun until False, at most ``drain_s``): the mission uses
    them to end a running fetch with the robot stopped before the node is destroyed.
    """
    while rclpy.ok() and not stop.is_set():
        executor.spin_once(timeout_sec=_POLL_S)
    request = getattr(node, "request_shutdown", None)
    if request is None or not rclpy.ok():
        return
    request()
    pending = getattr(node, "shutdown_pending", lambda: False)
    deadline = time.monotonic() + drain_s
    while pending() and time.monotonic() < deadline and rclpy.ok():
        executor.spin_once(timeout_sec=0.02)


def run_node(factory: Callable[[], Node], args: list[str] | None = None, *,
             small_messages: bool = False, executor_factory: Callable[[], Executor] | None = None,
             drain_s: float = 5.0) -> int:
    """Create the node with ``factory`` and spin it until SIGINT/SIGTERM; return the exit code.

    SIGINT/SIGTERM end the node with exit code 0, without a traceback. A parameter outside its
    declared range or another error while constructing the node prints one line and exits 2.
    ``small_messages=True`` is for nodes that never publish large messages (no images, maps
    or point clouds): they get the 1 MiB shared-memory segment profile, about 50 MB less
    resident memory. ``executor_factory`` replaces the default events executor (the mission
    needs a multi-threaded one for its blocking action).
    """
    if small_messages:
        use_small_message_profile()
    with StopFlag() as stop:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        node = None
        executor = None
        try:
            node = factory()
            executor = (executor_factory or make_executor)()
            executor.add_node(node)
            spin_until_stopped(node, executor, stop, drain_s)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        except rclpy.exceptions.ParameterException as exc:  # includes out-of-range values
            print(f"error: {exc}", file=sys.stderr)
            return 2
        finally:
            if executor is not None:
                executor.shutdown(timeout_sec=1.0)
            if node is not None:
                node.destroy_node()
            rclpy.try_shutdown()
    return 0
