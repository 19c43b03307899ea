"""``python -m rlstack_mission.send_fetch "the yellow cube" --dropoff X Y YAW``: send one fetch, print feedback.

The command-line client of the ``/fetch`` action for machines without ros2cli (with it:
``ros2 action send_goal /fetch rlstack_interfaces/action/Fetch ... --feedback``). Exit status 0
when the fetch succeeded, 1 when it ended with another code, 2 when no mission node answered.
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


def send_fetch(node, query: str, dropoff_xyyaw, timeout_s: float = 600.0, frame: str = "map",
               on_feedback: Optional[Callable[[str, str], None]] = None, action_name: str = "/fetch",
               server_timeout_s: float = 30.0) -> Dict:
    """Send one Fetch goal from ``node`` (spun by the caller's executor in another thread, or by
    this function with ``rclpy.spin_once`` when ``node.executor`` is None) and wait for the result.

    Returns a dict: code, code_name, reason, phase durations, wall time.
    """
    import rclpy
    from rclpy.action import ActionClient

    from rlstack_interfaces.action import Fetch

    client = ActionClient(node, Fetch, action_name)

    def wait(fut, limit):
        end = time.monotonic() + limit
        while not fut.done():
            if time.monotonic() > end:
                return False
            if node.executor is None:
                rclpy.spin_once(node, timeout_sec=0.05)
            else:
                time.sleep(0.02)
        return True

    end = time.monotonic() + server_timeout_s
    while not client.server_is_ready():
        if time.monotonic() > end:
            raise TimeoutError(f"no fetch action server at {action_name} within {server_timeout_s:g} s")
        if node.executor is None:
            rclpy.spin_once(node, timeout_sec=0.1)
        else:
            time.sleep(0.05)
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
    if not wait(res_fut, timeout_s):
        cancel = handle.cancel_goal_async()
        wait(cancel, 10.0)
        wait(res_fut, 30.0)
        if not res_fut.done():
            raise TimeoutError(f"the fetch did not finish within {timeout_s:g} s, nor after a cancel")
    r = res_fut.result().result
    client.destroy()
    return {"code": int(r.code), "code_name": FETCH_CODES.get(int(r.code), str(r.code)), "reason": r.reason,
            "phase_durations": {n: round(float(d), 2) for n, d in zip(r.phase_names, r.phase_durations)},
            "wall_s": round(time.monotonic() - t0, 2)}


def main(argv=None) -> int:
    import rclpy

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("query", help="what to fetch, e.g. 'the yellow cube'")
    p.add_argument("--dropoff", nargs=3, type=float, default=(-0.5, 0.0, math.pi), metavar=("X", "Y", "YAW"),
                   help="drop-off point (map frame; m, m, rad: the robot faces along YAW when dropping)")
    p.add_argument("--timeout", type=float, default=600.0, help="give up (cancel) after this long, s")
    a = p.parse_args(argv)
    rclpy.init()
    node = rclpy.create_node("send_fetch")
    try:
        result = send_fetch(node, a.query, a.dropoff, a.timeout,
                            on_feedback=lambda ph, d: print(f"[{ph}] {d}", flush=True))
    except TimeoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    print(json.dumps(result, indent=2))
    return 0 if result["code"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
