"""MissionStatus: what the mission node is doing, on ``~/status`` and /diagnostics, and its rejected input.

``/mission/status`` (std_msgs/String, latched): JSON of ``phase``, ``detail``, ``missions``,
``succeeded`` and, after a fetch, ``query``, ``last_result``, ``grasp_attempts``, ``target``.
``/diagnostics`` (once a second, from the node's timer): the same values, ``rejected_total`` and
``rejected.<input>.<kind>`` counts of the bad input the node's subscriptions refused.
"""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any, Dict

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from std_msgs.msg import String

__all__ = ["MissionStatus"]


class MissionStatus:
    """The node's status values and rejected-input counts, with their two publishers."""

    def __init__(self, node: Any, latched_qos: Any) -> None:
        self._node = node
        self.values: Dict[str, Any] = {"phase": "IDLE", "detail": "", "missions": 0, "succeeded": 0}
        self.rejected: Dict[str, int] = {}   # bad input by "<input>.<kind>"
        self._lock = threading.Lock()
        self._last_reject_log: Dict[str, float] = {}
        self._pub = node.create_publisher(String, "~/status", latched_qos)
        self._diag_pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)

    def set_phase(self, phase: str, detail: str) -> None:
        """A fetch's phase and what happens in it, published at once."""
        self.values.update(phase=phase, detail=detail)
        self.publish()

    def publish(self) -> None:
        self._pub.publish(String(data=json.dumps(self.values)))

    def reject(self, what: str, kind: str, message: str) -> None:
        """Bad input: counted (/diagnostics ``rejected.<what>.<kind>``), logged once per kind every 5 s,
        and not used (the last good value stays)."""
        key = f"{what}.{kind}"
        with self._lock:
            self.rejected[key] = self.rejected.get(key, 0) + 1
            count = self.rejected[key]
        now = time.monotonic()
        if now - self._last_reject_log.get(key, -math.inf) >= 5.0:
            self._last_reject_log[key] = now
            self._node.get_logger().warning(f"rejected {what} ({kind}): {message} ({count} so far)")

    def publish_diagnostics(self) -> None:
        values = self.values
        s = DiagnosticStatus(name="mission", hardware_id="rlstack", message=f"{values['phase']}: "
                             f"{values['detail']}"[:200])
        s.level = DiagnosticStatus.OK
        with self._lock:
            rejected = dict(self.rejected)
        values = {**values, "rejected_total": sum(rejected.values()),
                  **{f"rejected.{k}": n for k, n in sorted(rejected.items())}}
        s.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        arr = DiagnosticArray(status=[s])
        arr.header.stamp = self._node.get_clock().now().to_msg()
        self._diag_pub.publish(arr)
