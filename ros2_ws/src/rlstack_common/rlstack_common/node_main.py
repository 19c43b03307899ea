"""One way to run a node: init, spin, and stop cleanly on SIGINT/SIGTERM.

Why the classic ``SingleThreadedExecutor`` (a wait set) and not the EventsExecutor: under CPU
overload the EventsExecutor of rclpy 9.1.2 (Kilted wheels) stopped delivering subscription
and service events to the sim bridge *for good*: its timers kept running (clock, odometry and
camera were published), but ``/cmd_vel`` was never taken again and its parameter and reset
services never answered, minutes after the load was gone. Seen in ``make demo`` and in CI's
fetch tests (the base stood still, then every later test failed on "reset did not answer");
reproduced with the fetch graph beside three busy processes: with the EventsExecutor the
bridge's reset service never answered, with the wait-set executor the same run went on (slowly).
A wait set asks the middleware what is ready on every turn, so it cannot lose an event.
``RLSTACK_EXECUTOR=events`` still selects the EventsExecutor (about 3x lower topic latency
measured here on a quiet machine) for benchmarks and experiments; see docs/reference/middleware.md.

Why a ``spin_once`` loop and not ``executor.spin()``: with rclpy 9.1.2 (Kilted wheels),
``EventsExecutor.spin()`` blocked without running a single callback (timers, subscriptions
and services all stayed silent, and SIGINT was not honoured), while ``spin_once`` in a loop
runs them all. See docs/reference/middleware.md.

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

from rlstack_common.spin import Deadline

#: how often the spin loop looks at the stop flag, s (a callback in progress finishes first)
_POLL_S = 0.1


def make_executor() -> Executor:
    """The executor a node spins on: a wait-set ``SingleThreadedExecutor`` unless
    ``RLSTACK_EXECUTOR=events`` (see the module docstring for why)."""
    choice = os.environ.get("RLSTACK_EXECUTOR", "single")
    if choice not in ("single", "events"):
        raise ValueError(f"RLSTACK_EXECUTOR must be 'single' or 'events', got {choice!r}")
    if choice == "single":
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

    #: after a stop signal, the process gets this long to wind down and exit, s (see _force_exit)
    exit_deadline_s = 8.0

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: Optional[int] = None
        self._previous: dict = {}

    def _handle(self, signum: int, _frame: object) -> None:
        if not self.event.is_set():
            threading.Thread(target=self._force_exit, name="stop_deadline", daemon=True).start()
        self.signal = self.signal or signum
        self.event.set()

    def _force_exit(self) -> None:
        """Last resort: once a stop was asked for, the process ends within ``exit_deadline_s``.

        Seen once in CI (1 run in many): a quiet node (smoke_map) neither finished its wind-down
        nor reacted to the SIGTERM that followed, and needed SIGKILL; it did not reproduce in 12
        tries here. If it happens again, this thread prints where every thread is (for the bug
        report) and ends the process with exit code 0: the stop was asked for and the node's work
        is over; only the teardown hung. 8 s: after the 5 s wind-down (the mission's drain) and
        before ``ros2 launch`` (SIGTERM after 5 s, then SIGKILL) or our runner (``--grace`` 10 s)
        would kill it.
        """
        time.sleep(self.exit_deadline_s)
        import faulthandler

        print(f"[node_main] shutdown did not finish within {self.exit_deadline_s:g} s of the stop signal; "
              "exiting (thread stacks follow)", file=sys.stderr, flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(0)

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


#: ``kill -USR1 <pid>`` prints where every thread of a node is, and the node keeps running
STACK_DUMP_SIGNAL = signal.SIGUSR1


def register_stack_dump() -> None:
    """Print every thread's Python stack to stderr on SIGUSR1, without stopping the node.

    For a node that stops answering: the test harness (``ProcessGroup.dump_stacks``) and the
    runner (which forwards SIGUSR1 to every node it started) use it when a graph stalls, so the
    report says where each node was stuck instead of only that it was.
    """
    import faulthandler

    if threading.current_thread() is threading.main_thread():
        faulthandler.register(STACK_DUMP_SIGNAL, file=sys.stderr, all_threads=True, chain=False)


def _wants_fast_lane(node: Node, executor: Executor) -> bool:
    """A node that serves lockstep calls (``use_fast_lane()`` true: the lockstep and batch bridges)
    spins its services and subscriptions on :class:`rlstack_common.fast_lane.FastLane` when the
    executor is the wait-set one; ``RLSTACK_FAST_LANE=0`` turns it off (A/B benchmarks)."""
    if os.environ.get("RLSTACK_FAST_LANE", "1") == "0" or not isinstance(executor, SingleThreadedExecutor):
        return False
    wants = getattr(node, "use_fast_lane", None)
    if wants is None or not wants():
        return False
    from rlstack_common.fast_lane import FastLane

    return FastLane.available()


def spin_until_stopped(node: Node, executor: Executor, stop: StopFlag, drain_s: float = 5.0) -> None:
    """Spin until ``stop`` is set (or rclpy shuts down), then let the node wind down.

    A node may offer ``request_shutdown()`` (called once, on the spin thread) and
    ``shutdown_pending() -> bool`` (spun until False, at most ``drain_s``): the mission uses
    them to end a running fetch with the robot stopped before the node is destroyed.
    """
    if _wants_fast_lane(node, executor):
        from rlstack_common.fast_lane import spin_with_fast_lane

        spin_with_fast_lane(node, executor, lambda: rclpy.ok() and not stop.is_set(), _POLL_S)
    else:
        while rclpy.ok() and not stop.is_set():
            executor.spin_once(timeout_sec=_POLL_S)
    request = getattr(node, "request_shutdown", None)
    if request is None or not rclpy.ok():
        return
    request()
    pending = getattr(node, "shutdown_pending", lambda: False)
    deadline = Deadline(drain_s)
    while pending() and not deadline.expired() and rclpy.ok():
        executor.spin_once(timeout_sec=0.02)


def run_node(factory: Callable[[], Node], args: list[str] | None = None, *,
             small_messages: bool = False, executor_factory: Callable[[], Executor] | None = None,
             drain_s: float = 5.0) -> int:
    """Create the node with ``factory`` and spin it until SIGINT/SIGTERM; return the exit code.

    SIGINT/SIGTERM end the node with exit code 0, without a traceback. A parameter outside its
    declared range or another error while constructing the node prints one line and exits 2.
    ``small_messages=True`` is for nodes that never publish large messages (no images, maps
    or point clouds): they get the 1 MiB shared-memory segment profile, about 50 MB less
    resident memory. ``executor_factory`` replaces the default executor (the mission
    needs a multi-threaded one for its blocking action).
    """
    if small_messages:
        use_small_message_profile()
    register_stack_dump()
    with StopFlag() as stop:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        node = None
        executor = None
        try:
            try:
                node = factory()
            except ValueError as exc:   # a parameter value or combination the node refuses at start
                print(f"error: {exc}", file=sys.stderr)
                return 2
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
