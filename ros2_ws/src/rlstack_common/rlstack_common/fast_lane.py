"""A faster spin loop for request/response servers: lockstep sim bridges.

Why: the wait-set ``SingleThreadedExecutor`` of rclpy 9.1.2 rebuilds its wait set in Python on
every turn (it filters every entity of the node, enters each handle, makes a timeout ``Timer``,
wraps each callback in a ``Task`` around a coroutine). A lockstep bridge does one turn or more
per simulator step, and in a profile that rebuild was ~30 % of the bridge's
time (docs/reference/sim-bridge.md). The EventsExecutor is faster but lost events for good under CPU
overload (``node_main``), so it is not an option for a bridge a training run depends on.

:class:`FastLane` keeps the part of a turn that matters: one wait on the node's services and
subscriptions (the step and reset calls, the command topics, the parameter services), then
each ready one is taken and its callback run directly, subscriptions first (the executor's
order: a command published before a step call is applied before the step). Timers, guard
conditions, QoS event waitables and clients still go through the executor: the spin loop
gives it a turn every ``executor_turn_s``. A wait set asks the middleware what is ready, as the
executor does, so no event can be lost. Taking an entity that the executor (or this lane)
already took returns nothing, so both may look at the same entity.

Measured (docs/reference/sim-bridge.md, docs/reference/training.md): with a 2 ms poll before blocking,
~8-10 % more batched env steps/s than the executor in the same hour; single lockstep calls within
the run-to-run spread (1,394 vs 1,322 steps/s for ``ball_plate``); 15-40 % less bridge CPU.

Uses rclpy's ``_rclpy`` wait set and the handles' take calls (what the executor itself calls;
rclpy is pinned). :func:`FastLane.available` says whether this rclpy has them; the spin loop
falls back to the executor if not.
"""

from __future__ import annotations

import itertools
import threading
import time
from contextlib import ExitStack
from typing import Callable, List, Optional, Tuple

from rclpy.node import Node


class FastLane:
    """Wait on ``node``'s services and subscriptions in a wait set of their own; run what is ready."""

    def __init__(self, node: Node) -> None:
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

        self._rclpy = _rclpy
        self.node = node
        self._key: Optional[Tuple[int, ...]] = None
        self._subs: List = []
        self._srvs: List = []
        self._wait_set = None

    @staticmethod
    def available() -> bool:
        try:
            from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
        except ImportError:
            return False
        return all(hasattr(_rclpy.WaitSet, m) for m in ("clear_entities", "add_subscription", "add_service",
                                                         "wait", "get_ready_entities"))

    def _refresh(self) -> None:
        """Rebuild the entity lists when the node's subscriptions or services changed (a scene
        reload replaces the command subscriptions)."""
        subs, srvs = list(self.node.subscriptions), list(self.node.services)
        key = tuple(id(e) for e in subs) + (-1,) + tuple(id(e) for e in srvs)
        if key != self._key:
            self._key, self._subs, self._srvs = key, subs, srvs
            self._wait_set = self._rclpy.WaitSet(len(subs), 0, 0, 0, len(srvs), 0, self.node.context.handle)

    def _wait(self, timeout_s: float):
        """One wait on the lane's entities: the handles of the ready subscriptions and services."""
        self._refresh()
        ws = self._wait_set
        with ExitStack() as stack:
            stack.enter_context(self.node.context.handle)
            ws.clear_entities()
            for sub in self._subs:
                stack.enter_context(sub.handle)
                ws.add_subscription(sub.handle)
            for srv in self._srvs:
                stack.enter_context(srv.handle)
                ws.add_service(srv.handle)
            ws.wait(max(0, int(timeout_s * 1e9)))
            return ws.get_ready_entities("subscription"), ws.get_ready_entities("service")

    def turn(self, timeout_s: float, poll_s: float = 0.0, clock: Optional[Callable[[], float]] = None) -> int:
        """Wait up to ``timeout_s`` for a request or message, then run every ready callback once.
        The first ``poll_s`` of the wait polls instead of blocking: a lockstep client's next call
        comes within a millisecond, and a thread woken from a blocking wait answered it ~10 % later
        (measured: docs/reference/sim-bridge.md). Returns how many callbacks ran."""
        clock = clock or time.monotonic
        poll_until = clock() + poll_s
        while True:
            polling = clock() < poll_until
            subs_ready, srvs_ready = self._wait(0.0 if polling else timeout_s)
            if subs_ready or srvs_ready or not polling:
                break
        ran = 0
        for sub in self._subs:
            if sub.handle.pointer in subs_ready:
                ran += _run_subscription(sub)
        for srv in self._srvs:
            if srv.handle.pointer in srvs_ready:
                ran += _run_service(srv)
        return ran


def _run_subscription(sub) -> int:
    with sub.handle:
        taken = sub.handle.take_message(sub.msg_type, sub.raw)
    if taken is None:   # the executor took it first
        return 0
    if sub._callback_type is sub.CallbackType.MessageOnly:
        sub.callback(taken[0])
    else:
        sub.callback(*taken)
    return 1


def _run_service(srv) -> int:
    with srv.handle:
        request, header = srv.handle.service_take_request(srv.srv_type.Request)
    if header is None:
        return 0
    response = srv.callback(request, srv.srv_type.Response())
    srv.send_response(response, header)
    return 1


def spin_with_fast_lane(node: Node, executor, keep_going: Callable[[], bool], poll_s: float,
                        executor_turn_s: float = 0.05, busy_poll_s: float = 0.002,
                        clock: Optional[Callable[[], float]] = None) -> None:
    """Spin ``node`` until ``keep_going()`` is false: the fast lane between executor turns
    (timers and the rest) at least every ``executor_turn_s``. For ``busy_poll_s`` after the lane
    last ran a callback it polls rather than blocks (the next lockstep call is due within ~1 ms);
    idle, it blocks and costs no CPU."""
    clock = clock or time.monotonic
    lane = FastLane(node)
    node.get_logger().info("spinning services and subscriptions on the fast lane (rlstack_common.fast_lane; "
                           "RLSTACK_FAST_LANE=0: the executor alone)")
    next_executor_turn = clock()
    last_work = -1e9
    while keep_going():
        now = clock()
        if now >= next_executor_turn:
            executor.spin_once(timeout_sec=0)
            next_executor_turn = now + executor_turn_s
        timeout = min(poll_s, max(0.0, next_executor_turn - clock()))
        poll = min(timeout, max(0.0, last_work + busy_poll_s - now))
        if lane.turn(timeout, poll, clock):
            last_work = clock()


_DIRECT_NODES = itertools.count()


class DirectClient:
    """A service client that waits for its answer on a wait set of its own, not in an executor.

    Why: a lockstep training client makes one call per simulator step and does nothing else while
    it waits. Through ``call_async`` and an executor each call also builds a Future, runs the
    executor's take/dispatch machinery and (EventsExecutor) a C++ event queue round; here a call is
    ``send_request``, one wait on this client alone, ``take_response``. The client lives on a node
    of its own (``<node>_calls``) that no executor spins: an executor spinning it could take the
    answer first. Same rclpy internals as :class:`FastLane` (what ``Client.call_async`` and the
    executor call); a response to an earlier, timed-out request is recognised by its sequence
    number and dropped.
    """

    def __init__(self, node: Node, srv_type, srv_name: str, qos_profile=None) -> None:
        import rclpy
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
        from rclpy.qos import qos_profile_services_default

        self.srv_type = srv_type
        self.srv_name = srv_name
        n = next(_DIRECT_NODES)
        self.node = rclpy.create_node(f"{node.get_name()}_calls" + (f"_{n}" if n else ""),
                                      namespace=node.get_namespace(), context=node.context,
                                      start_parameter_services=False)
        self.client = self.node.create_client(srv_type, srv_name,
                                              qos_profile=qos_profile or qos_profile_services_default)
        self._ws = _rclpy.WaitSet(0, 0, 0, 1, 0, 0, node.context.handle)

    def service_is_ready(self) -> bool:
        return self.client.service_is_ready()

    def call(self, request, timeout_s: float, should_stop: Callable[[], bool] = lambda: False,
             slice_s: float = 0.1):
        """Send ``request`` and return the response. ``TimeoutError`` after ``timeout_s``;
        ``InterruptedError`` once ``should_stop()`` is true (checked every ``slice_s`` of waiting)."""
        h = self.client.handle
        with h:
            seq = h.send_request(request)
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            with ExitStack() as stack:
                stack.enter_context(self.node.context.handle)
                stack.enter_context(h)
                self._ws.clear_entities()
                self._ws.add_client(h)
                self._ws.wait(max(0, int(min(slice_s, max(remaining, 0.0)) * 1e9)))
                ready = self._ws.get_ready_entities("client")
            if ready:
                with h:
                    header, response = h.take_response(self.srv_type.Response)
                if header is not None and header.request_id.sequence_number == seq:
                    return response
                continue   # nothing taken, or the answer to an earlier, abandoned request
            if should_stop():
                raise InterruptedError(f"stopped while waiting for {self.srv_name}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no answer from {self.srv_name} within {timeout_s:g} s")

    def destroy(self) -> None:
        self.node.destroy_node()


class SubscriptionLane:
    """Subscriptions taken in a thread of their own, on a node of their own that no executor spins.

    Why: a node whose executor must stay multi-threaded (the mission: its action runs blocking
    steps) and that takes state at a high rate (/tf, /odom, /joint_states at 60 Hz each) wakes that
    executor a few hundred times a second, and each wake rebuilds the wait set of every entity of
    the node in Python: ~60 % of the mission node's CPU in a profile, its own logic ~6 %. Here
    those subscriptions wait in a :class:`FastLane` of their own (a wait set of a few handles, the
    message taken and the callback run directly), and the node's executor wakes only for what
    the node does.

    The lane's node is ``_<owner>_<suffix>`` in the owner's namespace: hidden (the leading
    underscore), as it has no parameters, so ``ros2 node list`` and ``ros2 param list`` show the
    owner alone (``-a`` shows it). It is made without the process's global arguments (a ``__node``
    remapping would give it the owner's name); :meth:`subscribe` resolves each topic as the owner
    does, so the owner's remappings apply. A callback that raises is logged (throttled) and the
    lane goes on: a bad message must not stop the state.
    """

    def __init__(self, owner: Node, suffix: str, timeout_s: float = 0.1) -> None:
        import rclpy

        self.owner, self.timeout_s = owner, timeout_s
        self.node = rclpy.create_node(f"_{owner.get_name()}_{suffix}", namespace=owner.get_namespace(),
                                      context=owner.context, use_global_arguments=False,
                                      start_parameter_services=False)
        self._lane = FastLane(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name=f"{owner.get_name()}_{suffix}", daemon=True)
        self.errors = 0   # callbacks that raised

    def subscribe(self, msg_type, topic: str, callback: Callable, qos):
        """A subscription of the lane to ``topic`` as the owner resolves it (its remappings apply)."""
        return self.node.create_subscription(msg_type, self.owner.resolve_topic_name(topic), callback, qos)

    def start(self) -> None:
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set() and self.node.context.ok():
            try:
                self._lane.turn(self.timeout_s)
            except Exception as exc:   # noqa: BLE001 - a callback's error must not end the lane
                if self._stop.is_set() or not self.node.context.ok():
                    return   # the context shut down under the wait
                self.errors += 1
                self.owner.get_logger().error(f"{self.node.get_name()}: {type(exc).__name__}: {exc}",
                                              throttle_duration_sec=5.0)

    def destroy(self) -> None:
        """Stop the thread (within ``timeout_s``) and destroy the lane's node."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.timeout_s + 2.0)
        self.node.destroy_node()
