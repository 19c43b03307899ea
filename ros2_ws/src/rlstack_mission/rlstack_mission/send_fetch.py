"""``python -m rlstack_mission.send_fetch "the yellow cube" --dropoff X Y YAW``: send one fetch, print feedback.

The command-line client of the ``/fetch`` action for machines without ros2cli (with it:
``ros2 action send_goal /fetch rlstack_interfaces/action/Fetch ... --feedback``). It prints each
feedback as ``[PHASE] detail`` and the result as JSON. Exit status 0 when the fetch succeeded,
1 when it ended with another code, 2 when no mission node answered, 130 on Ctrl-C (the goal is
canceled first, so the robot stops).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Callable, Dict, Optional

from .fetch import FetchCode

#: result code -> name (the codes of rlstack_interfaces/action/Fetch)
FETCH_CODES = {int(c): c.name for c in FetchCode}
#: the client's own code: the mission's action server went away mid-fetch (no result can come)
MISSION_LOST = -1
FETCH_CODES[MISSION_LOST] = "MISSION_LOST"


def fetch_action_client(node, action_name: str = "/fetch"):
    """The node's one ``Fetch`` action client for ``action_name``, created on first use and kept for
    the node's life.

    Why never destroyed: destroying an action client while another thread's executor has it in
    its wait set crashed that executor ("action client pointer is invalid"); the node then
    answered nothing, and the next reset call of the evaluation (and of CI's fetch tests) timed
    out ("reset did not answer in 30 s"). The node's own destruction cleans it up.
    """
    from rclpy.action import ActionClient

    from rlstack_interfaces.action import Fetch

    clients = node.__dict__.setdefault("_rlstack_fetch_clients", {})
    if action_name not in clients:
        clients[action_name] = ActionClient(node, Fetch, action_name)
    return clients[action_name]


def send_fetch(node, query: str, dropoff_xyyaw, timeout_s: float = 600.0, frame: str = "map",
               on_feedback: Optional[Callable[[str, str], None]] = None, action_name: str = "/fetch",
               server_timeout_s: float = 30.0, spin_once: Optional[Callable[[float], None]] = None,
               server_lost_s: float = 3.0) -> Dict:
    """Send one Fetch goal from ``node`` and wait for the result.

    Who spins ``node``: with ``spin_once=None`` the caller's executor does, in another thread
    (the demo, the evaluation harness); otherwise this function calls ``spin_once(timeout_s)``
    while it waits (the command line, which owns a single-threaded executor). It does not guess
    from ``node.executor``: rclpy's ``spin_once(node)`` leaves the global executor there, and a
    client that guessed stopped spinning after the first wait (it would hang for ever).

    Returns a dict: code, code_name, reason, phase durations, wall time. When the action server
    disappears mid-fetch for ``server_lost_s`` (its process died), the code is ``MISSION_LOST``
    (-1, this client's own: the mission could not say anything).
    """
    from rlstack_interfaces.action import Fetch

    client = fetch_action_client(node, action_name)

    def pause(seconds: float) -> None:
        if spin_once is None:
            time.sleep(seconds)
        else:
            spin_once(seconds)

    def wait(fut, limit):
        end = time.monotonic() + limit
        while not fut.done():
            if time.monotonic() > end:
                return False
            pause(0.05)
        return True

    def wait_result(fut, limit) -> Optional[bool]:
        """Like ``wait``; None when the action server has been gone for ``server_lost_s`` (the
        mission's process exited: no result will ever come)."""
        end = time.monotonic() + limit
        gone_since: Optional[float] = None
        while not fut.done():
            now = time.monotonic()
            if now > end:
                return False
            if client.server_is_ready():
                gone_since = None
            elif gone_since is None:
                gone_since = now
            elif now - gone_since > server_lost_s:
                return None
            pause(0.05)
        return True

    end = time.monotonic() + server_timeout_s
    while not client.server_is_ready():
        if time.monotonic() > end:
            raise TimeoutError(f"no fetch action server at {action_name} within {server_timeout_s:g} s")
        pause(0.1)
    goal = Fetch.Goal(query=query)
    x, y, yaw = dropoff_xyyaw
    goal.dropoff.header.frame_id = frame
    goal.dropoff.pose.position.x, goal.dropoff.pose.position.y = float(x), float(y)
    goal.dropoff.pose.orientation.z, goal.dropoff.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    t0 = time.monotonic()
    fb = (lambda m: on_feedback(m.feedback.phase, m.feedback.detail)) if on_feedback else None
    send = client.send_goal_async(goal, feedback_callback=fb)
    if not wait(send, 30.0):
        raise TimeoutError("the fetch goal was not acknowledged within 30 s")
    handle = send.result()
    if not handle.accepted:
        return {"code": 5, "code_name": "REJECTED", "reason": "the mission rejected the goal (a fetch is running?)",
                "phase_durations": {}, "wall_s": 0.0}
    res_fut = handle.get_result_async()
    try:
        finished = wait_result(res_fut, timeout_s)
    except KeyboardInterrupt:  # Ctrl-C: cancel, so the mission stops the robot, then pass it on
        cancel = handle.cancel_goal_async()
        wait(cancel, 5.0)
        raise
    if finished is None:
        return {"code": MISSION_LOST, "code_name": "MISSION_LOST",
                "reason": f"the fetch action server {action_name} went away mid-fetch (the mission's process "
                          f"exited?); no result will come",
                "phase_durations": {}, "wall_s": round(time.monotonic() - t0, 2)}
    if not finished:
        cancel = handle.cancel_goal_async()
        wait(cancel, 10.0)
        wait(res_fut, 30.0)
        if not res_fut.done():
            raise TimeoutError(f"the fetch did not finish within {timeout_s:g} s, nor after a cancel")
    r = res_fut.result().result
    return {"code": int(r.code), "code_name": FETCH_CODES.get(int(r.code), str(r.code)), "reason": r.reason,
            "phase_durations": {n: round(float(d), 2) for n, d in zip(r.phase_names, r.phase_durations)},
            "step_durations": {n: round(float(d), 2) for n, d in zip(r.step_names, r.step_durations)},
            "wall_s": round(time.monotonic() - t0, 2)}


def main(argv=None) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("query", help="what to fetch, e.g. 'the yellow cube'")
    p.add_argument("--dropoff", nargs=3, type=float, default=(-0.5, 0.0, math.pi), metavar=("X", "Y", "YAW"),
                   help="drop-off point (map frame; m, m, rad: the robot faces along YAW when dropping)")
    p.add_argument("--timeout", type=float, default=600.0, help="give up (cancel) after this long, s")
    a = p.parse_args(argv)
    rclpy.init()
    node = rclpy.create_node("send_fetch")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        result = send_fetch(node, a.query, a.dropoff, a.timeout,
                            on_feedback=lambda ph, d: print(f"[{ph}] {d}", flush=True),
                            spin_once=lambda t: executor.spin_once(timeout_sec=t))
    except TimeoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: the fetch was canceled", file=sys.stderr)
        return 130
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.try_shutdown()
    print(json.dumps(result, indent=2), flush=True)
    return 0 if result["code"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
