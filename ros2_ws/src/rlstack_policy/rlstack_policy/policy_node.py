"""policy_node: serve a policy bundle (ONNX + io.yaml) as a ROS 2 lifecycle node.

Thin adapter around :mod:`rlstack_policy.core` and :mod:`rlstack_policy.runner`
(docs/reference/policy-node.md): parameters, topics, timers, lifecycle, conversions.

* configure: load and validate the bundle (``rlstack_bundle.bundle.load``: files, YAML,
  descriptor, ONNX sizes vs descriptor, SHA-256; no torch, no pickle), compile the
  descriptor against the ROS message types, create one subscription per observation topic
  and one publisher per action topic. Any problem: a clear error, the node stays up and
  unconfigured.
* image observation terms (``image_observation`` in io.yaml, pixel policies): one
  ``sensor_msgs/Image`` subscription per term; every frame is checked (encoding, size: a wrong
  one is rejected with a one-line reason and counted), cropped and resized by
  ``rlstack_bundle.images.preprocess`` and stacked by header stamp; an incomplete stack, a gap
  or a stale image is a safe step, counted in diagnostics by reason.
* activate: start the loop (``trigger: timer`` at the control rate on the node clock, or
  ``trigger: message``: one step per complete set of new observations, with a watchdog).
* deactivate: stop the loop and publish the safe action.
* a new ``bundle_path`` while configured swaps the bundle at run time (checked at once
  against the wired topics, loaded in a background thread, switched between two steps).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from rlstack_common import run_node
from rlstack_common.param_table import declare_all
from rlstack_common.qos import sensor_subscription
from rlstack_policy import core, runner
from rlstack_policy.parameters import POLICY_NODE

CAMERA_TYPES = ("Image", "CompressedImage", "CameraInfo")

TRIGGERS = ("timer", "message")


class PolicyNode(LifecycleNode):
    def __init__(self) -> None:
        super().__init__("policy_node")
        declare_all(self, POLICY_NODE)
        self._set_priority(self.get_parameter("realtime_priority").value)
        self._params_ready = True
        self._loaded: Optional[runner.LoadedPolicy] = None
        self._pending: Optional[Any] = None          # LoadedPolicy, or an error string, from the swap thread
        self._pending_lock = threading.Lock()
        self._swap_thread: Optional[threading.Thread] = None
        self._reverting = False
        self._subs: Dict[str, Any] = {}
        self._pubs: Dict[str, Any] = {}
        self._factories: Dict[str, Any] = {}
        self._wired_obs: Dict[str, str] = {}
        self._wired_act: Dict[str, str] = {}
        self._timer = None
        self._active = False
        self._trigger = "timer"
        self._stats = core.LoopStats(1.0)
        self._rx_steady: Dict[str, float] = {}
        self._last_step_clock: Optional[float] = None
        self._fault: Optional[str] = None
        self._rejected: Dict[str, int] = {}
        self._warned: Dict[str, float] = {}
        self._stale_events = 0
        # Safe steps by the first word of their reason (stale, non_finite, ...), for diagnostics.
        self._safe_steps_by_reason: Dict[str, int] = {}
        self._swaps = 0
        self._last_swap = "none"
        self._last_error = ""
        self._estop = core.EStopLatch()
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(Bool, "estop", self._on_estop,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.create_service(Trigger, "~/reset_estop", self._on_reset_estop)
        self._diag_timer = self.create_timer(self.get_parameter("diagnostics_period_s").value,
                                             self._publish_diagnostics, clock=self._steady)
        self.add_on_set_parameters_callback(self._on_params)
        if self.get_parameter("autostart").value:
            if self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
                self.trigger_activate()

    # ------------------------------------------------------------------ helpers
    def _set_priority(self, prio: int) -> None:
        """SCHED_FIFO for this thread and the threads it starts later (the executor's timer thread)."""
        if prio <= 0:
            return
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
            self.get_logger().info(f"realtime scheduling: SCHED_FIFO priority {prio}")
        except (PermissionError, OSError, AttributeError) as exc:
            self.get_logger().warning(f"realtime_priority {prio} refused ({exc}); normal scheduling")

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _warn_once(self, key: str, text: str, every_s: float = 5.0) -> None:
        now = time.monotonic()
        if now - self._warned.get(key, -1e9) >= every_s:
            self._warned[key] = now
            self.get_logger().warning(text)

    def _list_param(self, name: str) -> List[Any]:
        value = list(self.get_parameter(name).value or [])
        if name == "max_rate":
            return [] if (len(value) == 1 and value[0] < 0) else value
        return [v for v in value if v != ""]

    def _options(self) -> runner.ServeOptions:
        return runner.ServeOptions(self._list_param("key_indices"), self._list_param("topic_remaps"),
                                   self._list_param("safe_action"), self._list_param("max_rate"),
                                   self.get_parameter("rate_hz").value, self.get_parameter("stale_periods").value)

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        path = self.get_parameter("bundle_path").value
        self._trigger = self.get_parameter("trigger").value
        try:
            if self._trigger not in TRIGGERS:
                raise core.SpecError(f"trigger must be one of {', '.join(TRIGGERS)}, got '{self._trigger}'")
            if not path:
                raise core.SpecError("parameter bundle_path is empty: give the policy bundle folder")
            loaded = runner.prepare(os.path.abspath(path), self._options())
        except Exception as exc:  # BundleError, SpecError, anything unexpected: stay unconfigured
            self._last_error = f"configure failed: {exc}"
            self.get_logger().error(self._last_error)
            return TransitionCallbackReturn.FAILURE
        self._wire(loaded)
        self._loaded = loaded
        self._last_error = ""
        self._stats = core.LoopStats(loaded.period_s)
        self.get_logger().info(
            f"configured: bundle {loaded.path} (task {loaded.task}, {loaded.obs_plan.size} obs from "
            f"{', '.join(loaded.obs_plan.topics)} -> {loaded.act_plan.size} action(s) "
            f"to {', '.join(loaded.act_plan.topics)}"
            f" at {loaded.rate_hz:g} Hz, trigger {self._trigger})")
        return TransitionCallbackReturn.SUCCESS

    def _wire(self, loaded: runner.LoadedPolicy) -> None:
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        for topic, typ in loaded.obs_plan.topics.items():
            cls = core.message_class(typ)
            callback = lambda msg, t=topic: self._on_obs(t, msg)  # noqa: E731
            # camera terms (Image, CompressedImage, CameraInfo): best effort, as camera drivers publish
            self._subs[topic] = (sensor_subscription(self, cls, topic, callback) if typ.split("/")[-1] in CAMERA_TYPES
                                 else self.create_subscription(cls, topic, callback, qos))
            self._wired_obs[topic] = typ
        for topic, typ in loaded.act_plan.topics.items():
            cls = core.message_class(typ)
            self._pubs[topic] = self.create_publisher(cls, topic, qos)
            self._factories[topic] = cls
            self._wired_act[topic] = typ

    def _unwire(self) -> None:
        for sub in self._subs.values():
            self.destroy_subscription(sub)
        for pub in self._pubs.values():
            self.destroy_publisher(pub)
        self._subs, self._pubs, self._factories = {}, {}, {}
        self._wired_obs, self._wired_act = {}, {}

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._active = True
        self._start_timer()
        self.get_logger().info(f"active: {self._loaded.task} at {self._loaded.rate_hz:g} Hz ({self._trigger} trigger)")
        return TransitionCallbackReturn.SUCCESS

    def _start_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
        cb = self._on_timer if self._trigger == "timer" else self._on_watchdog
        self._timer = self.create_timer(self._loaded.period_s, cb)  # node clock: sim time with use_sim_time

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._go_inactive("deactivated")
        return TransitionCallbackReturn.SUCCESS

    def _go_inactive(self, why: str) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        if self._active and self._loaded is not None:
            self._publish(self._loaded.shaper.safe(), safe=True)
            self.get_logger().info(f"{why}: published the safe action, loop stopped")
        self._active = False

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._unwire()
        self._loaded = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._go_inactive("shutting down")
        self._unwire()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._go_inactive("error")
        self._unwire()
        self._loaded = None
        return TransitionCallbackReturn.SUCCESS

    # ------------------------------------------------------------------ inputs
    def _on_obs(self, topic: str, msg: Any) -> None:
        loaded = self._loaded
        if loaded is None:
            return
        self._rx_steady[topic] = time.perf_counter()
        kind = loaded.assembler.update(topic, msg, self._now())
        if kind is not None:
            key = f"{topic}/{kind}"
            self._rejected[key] = self._rejected.get(key, 0) + 1
            detail = loaded.assembler.topics[topic].error   # images: which encoding/size/stamp was wrong
            self._warn_once(f"rej:{key}", f"rejected a message on {topic}: {kind}"
                            f"{': ' + detail if detail else ''} (safe action until a good one)")
        if self._active and self._trigger == "message" and loaded.assembler.all_updated():
            self._step()

    def _on_estop(self, msg: Bool) -> None:
        if self._estop.input(msg.data):
            self.get_logger().error("e-stop: safe action latched until ~/reset_estop")
            if self._active and self._loaded is not None:
                self._step()

    def _on_reset_estop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self._estop.reset()
        self.get_logger().info(f"reset_estop: {response.message}")
        return response

    # ------------------------------------------------------------------ loop
    def _on_timer(self) -> None:
        self._stats.tick(time.perf_counter(), timer=True)
        self._step(ticked=True)

    def _on_watchdog(self) -> None:
        if self._last_step_clock is None or self._now() - self._last_step_clock >= self._loaded.assembler.stale_after_s:
            self._step()

    def _apply_pending(self) -> None:
        with self._pending_lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        if isinstance(pending, str):
            self._last_swap = f"refused: {pending}"
            self.get_logger().error(f"bundle swap refused, keeping {self._loaded.path}: {pending}")
            self._revert_param()
            return
        old = self._loaded
        runner.hand_over(old, pending)
        self._loaded = pending
        self._swaps += 1
        self._last_swap = f"ok: {pending.path} (task {pending.task})"
        self.get_logger().info(f"bundle swapped: {old.path} -> {pending.path}")
        if self._active and pending.rate_hz != old.rate_hz:
            self._start_timer()
        self._stats.period_s = pending.period_s

    def _step(self, ticked: bool = False) -> None:
        t0 = time.perf_counter()
        if self._pending is not None:
            self._apply_pending()
        loaded = self._loaded
        if not ticked:
            self._stats.tick(t0, timer=False)
        now = self._now()
        self._last_step_clock = now
        cmd, fault = runner.control_step(loaded, now, self._estop.latched)
        if fault is not None:
            reason = runner.fault_reason(fault)
            self._safe_steps_by_reason[reason] = self._safe_steps_by_reason.get(reason, 0) + 1
        self._publish(cmd, safe=fault is not None)
        if fault != self._fault:
            if fault is not None:
                if fault.startswith("stale"):
                    self._stale_events += 1
                self.get_logger().warning(f"safe action: {fault}")
            else:
                self.get_logger().info("observations good: policy in control")
            self._fault = fault
        t1 = time.perf_counter()
        rx = max((self._rx_steady.get(t, 0.0) for t in loaded.obs_plan.topics), default=0.0)
        self._stats.done(t1 - t0, (t1 - rx) if rx else None, safe=fault is not None)

    def _publish(self, cmd: np.ndarray, safe: bool) -> None:
        loaded = self._loaded
        for topic, msg in core.fill_messages(loaded.act_plan, cmd, self._factories).items():
            self._pubs[topic].publish(msg)
        loaded.shaper.commit(cmd)   # NaN (held, never sent) stays NaN until a real command

    # ------------------------------------------------------------------ swaps
    def _on_params(self, params: List[Parameter]) -> SetParametersResult:
        if not getattr(self, "_params_ready", False):
            return SetParametersResult(successful=True)
        configured = self._loaded is not None
        for prm in params:
            if prm.name == "bundle_path" and configured:
                if self._reverting:
                    continue
                reason = self._check_swap(prm.value)
                if reason:
                    self.get_logger().error(f"bundle swap refused, keeping {self._loaded.path}: {reason}")
                    self._last_swap = f"refused: {reason}"
                    return SetParametersResult(successful=False, reason=f"bundle refused: {reason}")
                self._start_swap(prm.value)
            elif configured and prm.name not in ("bundle_path", "use_sim_time"):
                return SetParametersResult(successful=False, reason=(
                    f"'{prm.name}' takes effect at configure: deactivate and clean up the node first"))
        return SetParametersResult(successful=True, reason="")

    def _check_swap(self, path: str) -> str:
        """Fast checks before loading: folder, io.yaml, wiring. '' = go ahead."""
        if self._swap_thread is not None and self._swap_thread.is_alive():
            return "another swap is still loading"
        return runner.check_swap(path, self._options(), self._wired_obs, self._wired_act)

    def _start_swap(self, path: str) -> None:
        self._swap_from = self._loaded.path
        self._last_swap = f"loading {path}"

        opts = self._options()

        def work() -> None:
            result = runner.load_for_swap(path, opts, self._wired_obs, self._wired_act)
            with self._pending_lock:
                self._pending = result

        self._swap_thread = threading.Thread(target=work, name="bundle-swap", daemon=True)
        self._swap_thread.start()

    def _revert_param(self) -> None:
        self._reverting = True
        try:
            self.set_parameters([Parameter("bundle_path", value=self._loaded.path)])
        finally:
            self._reverting = False

    # ------------------------------------------------------------------ diagnostics
    def _publish_diagnostics(self) -> None:
        if self._pending is not None and self._loaded is not None and not self._active:
            self._apply_pending()
        loaded = self._loaded
        st = DiagnosticStatus(name=f"{self.get_name()}: policy", hardware_id=loaded.task if loaded else "")
        state = "active" if self._active else ("inactive" if loaded else "unconfigured")
        values: Dict[str, Any] = {"state": state, "bundle": loaded.path if loaded else "", "trigger": self._trigger,
                                  "last_error": self._last_error}
        values.update(runner.diagnostic_values(loaded, self._stats.summary(time.perf_counter()), self._fault,
                                               self._stale_events, self._safe_steps_by_reason))
        values.update({
            "estop": "latched" if self._estop.latched else ("asserted" if self._estop.asserted else "clear"),
            "estop_trips": self._estop.trips, "rejected_total": sum(self._rejected.values()),
            "swaps": self._swaps, "last_swap": self._last_swap,
        })
        values.update({f"rejected.{k}": v for k, v in sorted(self._rejected.items())})
        if self._last_error or self._estop.latched:
            st.level, st.message = DiagnosticStatus.ERROR, self._last_error or "e-stop latched"
        elif self._active and self._fault:
            st.level, st.message = DiagnosticStatus.WARN, f"safe action: {self._fault}"
        else:
            st.level, st.message = DiagnosticStatus.OK, state
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        arr = DiagnosticArray(status=[st])
        arr.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(arr)


def main(args: Optional[List[str]] = None) -> int:
    # Publishes only small action messages: the 1 MiB SHM profile saves ~50 MB RSS.
    return run_node(PolicyNode, args, small_messages=True)


if __name__ == "__main__":
    sys.exit(main())
