"""Spin an rclpy executor in a background thread, and stop it so that the process can exit cleanly.

Why not just ``threading.Thread(target=executor.spin, daemon=True).start()``: a daemon thread that
is still waiting inside rcl (the GIL released) when the interpreter finalises wakes up afterwards,
is ended by CPython with ``pthread_exit``, and that forced unwind through rclpy's C++ ``noexcept``
frames calls ``std::terminate``. The process then dies with SIGABRT ("terminate called without an
active exception", exit status -6) after its work is done, instead of with its own exit code: the
fetch evaluator interrupted by SIGTERM did so in CI. :meth:`BackgroundSpin.stop` shuts the
executor down and joins the thread, so no thread is left inside rcl at exit.
"""

import threading
from typing import Any


class BackgroundSpin:
    """``executor.spin()`` in a daemon thread from construction until :meth:`stop`.

    Usage::

        spin = BackgroundSpin(executor)
        try:
            ...   # wait on futures, services and topics served by the executor
        finally:
            spin.stop()          # before destroying the executor's nodes and the context
            node.destroy_node()
            rclpy.try_shutdown()
    """

    def __init__(self, executor: Any, name: str = "executor-spin") -> None:
        self.executor = executor
        self.thread = threading.Thread(target=executor.spin, name=name, daemon=True)
        self.thread.start()

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Shut the executor down and join the spinning thread.

        Returns True when the thread has left ``spin()`` within ``timeout_s`` (each of the two
        waits gets that long); False means a callback still runs, and the caller should not
        destroy the executor's nodes under it. Safe to call twice."""
        self.executor.shutdown(timeout_sec=timeout_s)
        self.thread.join(timeout=timeout_s)
        return not self.thread.is_alive()
