"""A Gymnasium env whose every step goes through a lockstep ``sim_bridge`` over ROS 2.

The deployment topics feed training: ``step(action)`` turns the action into the task's
command (``io.yaml`` semantics), publishes it on the action term's topic(s), makes sure
the bridge has accepted it, calls ``/sim_bridge/step`` (one control step), then assembles
the observation from the observation terms' topics, waiting for the messages stamped with
the post-step sim time, exactly as a policy node would read them. Reward, termination and
success use the task's own hooks on the raw observation.

Lockstep ordering (a topic message and a service request travel on different DDS
entities, so "published before the call" does not imply "processed before the step"):
the bridge counts accepted command messages (``SimStep.Response.commands_received``, reset
to 0 by ``~/reset``). The env counts what it published.

* ``verify="before"`` (default, guaranteed): after publishing, call ``step`` with
  ``steps=0`` (advance nothing, report the counter) until the bridge reports every
  published command, then call ``step`` with ``steps=1``. Two round trips per step;
  bounded by ``sync_timeout_s``, then :class:`LockstepError`.
* ``verify="after"`` (one round trip): call ``steps=1`` at once; the single-threaded
  bridge reads the counter after stepping with no callback in between, so the response
  tells exactly whether the command applied to this step. A late command is counted in
  ``late_commands`` (and ``info["late_command"]``), not prevented.

``transport="request"`` (one round trip, exact, fastest): the command travels in the step
request (``SimStep.command_topics``/``command_values``, applied by the bridge before it steps,
through the same validation as the topics) and the observation comes back in the response
(``joint_state`` and, with ``with_objects``, the ground-truth object poses: the same values the
bridge would publish). No topic is published or subscribed, so a lockstep bridge publishes
nothing for this client (it builds only the streams that have subscribers). ``verify`` does not
apply (the command cannot be late). The default ``transport="topics"`` trains on the
deployment topics themselves, as described above.

``transport="standard"`` uses only the ROS 2 standard simulation interface (``simulation_interfaces``,
which Gazebo and Isaac Sim serve too) and the deployment topics: ``ResetSimulation`` and
``StepSimulation`` under ``services`` (default: the bridge's name; ``/`` for services at the root, as
Isaac Sim names them; ``/gzserver`` for Gazebo), commands and observations on the topics. The
standard has no command counter, so nothing confirms that a command reached the simulator before
the step it was meant for: the env publishes it, then calls ``StepSimulation`` at once, and a bridge
that takes ready subscriptions before services (ours: its fast lane and the executor both do)
applies it first once it has arrived. On one machine over shared memory the message comes first
in practice (tests/test_sim_interfaces.py compares every step with the in-process env, exactly);
across machines a command may be a step late, as for any client of the standard alone. (Waiting for
the subscription's acknowledgement, ``Publisher.wait_for_all_acked``, did not return within 2 s per
message here: not an option per step.) The standard cannot
choose a reset's seed: ``reset(seed=s)`` does not set the simulator's seed (``info["episode_seed"]``
is ``None``; our bridge draws its ``seed`` parameter + n for its n-th standard reset). The
observation after a step is the one stamped one control period after the previous one. Slower than
``request`` (a command message and an observation message per step besides the call), faster than
``topics`` (no ``steps=0`` sync call; bench/bench_sim_interfaces.py); the default stays ``topics``.

Observations stamped with the post-step sim time (``transport="topics"``): every observation topic's newest
message must carry ``response.sim_time`` (bounded by ``timeout_s``). The bridge must
publish them every control step: ``publish_rate_hz`` >= and ``ground_truth_rate_hz`` ==
the task's control rate, and ``control_rate_hz`` equal to it (checked from the first step).

Limits: tasks whose terms :mod:`rlstack_learning.ros.io` can read (cart-pole, ball-on-plate,
the Panda lift on the topics: its grasp point is read from ``/tf``, which a step response does
not carry; not the mobile lifts, whose ``/grasp_target`` no bridge publishes). No domain
randomisation over ROS (masses and friction need the simulator; the ball of ball-on-plate
starts at rest instead of rolling). ``reset(seed=s)`` resets the
bridge with seed ``s``: the same initial state as the in-process env's episode ``s``.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Union

import gymnasium as gym
import numpy as np

from rlstack_common.fast_lane import DirectClient
from rlstack_common.spin import Deadline
from rlstack_common.spin import spin_until as _spin_until

from ..checkpoints import TrainingInterrupted
from ..envs import ENVS, TRAIN_SEED_LIMIT
from .io import JOINT_STATE, MARKER_ARRAY, POSE_ARRAY, ActWriter, ObsReader, message_stamp_ns, stamp_ns


class LockstepError(RuntimeError):
    pass


class LockstepInterrupted(LockstepError, TrainingInterrupted):
    """``should_stop()`` turned true while waiting for the bridge (the process is shutting down)."""


def _msg_class(type_name: str):
    """``pkg/msg/Name`` -> the message class (rosidl_runtime_py is not in the wheels)."""
    import importlib

    pkg, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


def make_executor(context):
    import os

    if os.environ.get("RLSTACK_EXECUTOR", "events") == "single":
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor(context=context)
    from rclpy.experimental import EventsExecutor

    return EventsExecutor(context=context)



def spin_until(executor, should_stop, predicate, timeout: float, what: str) -> None:
    """Spin ``executor`` until ``predicate()``; LockstepInterrupted when ``should_stop()``,
    LockstepError after ``timeout`` seconds (shared by the single and the batched lockstep env)."""
    _spin_until(executor, predicate, timeout, what, step=0.1, should_stop=should_stop, error=LockstepError,
                stopped=LockstepInterrupted)


def direct_call(client, request, timeout: float, should_stop, what: str):
    """``client.call`` (a :class:`rlstack_common.fast_lane.DirectClient`: the step call waits on a
    wait set of its own, ~10 % more calls/s than ``call_async`` + executor, docs/reference/training.md) with
    the lockstep envs' errors (shared by the single and the batched lockstep env)."""
    try:
        return client.call(request, timeout, should_stop)
    except TimeoutError:
        raise LockstepError(f"timed out after {timeout:g} s waiting for {what}") from None
    except InterruptedError:
        raise LockstepInterrupted(f"stopped while waiting for {what}") from None


class LockstepEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, task: Union[str, type], node, executor=None, bridge: str = "/sim_bridge",
                 verify: str = "before", timeout_s: float = 10.0, sync_timeout_s: float = 2.0,
                 discovery_timeout_s: float = 30.0, randomize: Any = False,
                 should_stop: Optional[Callable[[], bool]] = None, transport: str = "topics",
                 services: Optional[str] = None) -> None:
        super().__init__()
        self.should_stop = should_stop or (lambda: False)
        from rclpy.qos import qos_profile_system_default

        from rlstack_interfaces.srv import ResetSim, SimStep

        cls = ENVS[task] if isinstance(task, str) else task
        if randomize:
            raise ValueError("domain randomisation is not available over ROS (masses/friction need the simulator)")
        if verify not in ("before", "after"):
            raise ValueError(f"verify must be 'before' or 'after', got {verify!r}")
        if transport not in ("topics", "request", "standard"):
            raise ValueError(f"transport must be 'topics', 'request' or 'standard', got {transport!r}")
        self.transport = transport
        self.task_cls = cls
        self.node = node
        self.own_executor = executor is None
        self.executor = executor or make_executor(node.context)
        if self.own_executor:
            self.executor.add_node(node)
        self.verify, self.timeout_s, self.sync_timeout_s = verify, float(timeout_s), float(sync_timeout_s)
        self.spec_max_steps = cls.max_episode_steps
        # a sim-free instance of the task: its reward/termination hooks and action mapping
        self.task = object.__new__(cls)
        self.reader = ObsReader(cls.obs_terms, cls.control_rate_hz)
        self.writer = ActWriter(cls.act_terms)
        self.period_ns = int(round(1e9 / cls.control_rate_hz))
        self._obs_scale = np.array([t.scale for t in cls.obs_terms], dtype=np.float64)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(len(cls.obs_terms),), dtype=np.float32)
        self.action_space = (gym.spaces.Discrete(len(cls.act_terms[0].choices)) if cls.discrete
                             else gym.spaces.Box(-1.0, 1.0, shape=(len(cls.act_terms),), dtype=np.float32))

        self._latest: Dict[str, Any] = {}
        self._names: Dict[str, List[str]] = {}
        self._subs: List[Any] = []
        self._marker_topics: Dict[str, str] = {}
        self._classes = {topic: _msg_class(t) for topic, t in self.writer.topics.items()}
        self._pubs: Dict[str, Any] = {}
        if transport in ("topics", "standard"):
            self._subs = [node.create_subscription(_msg_class(t), topic, self._store(topic), 10)
                          for topic, t in self.reader.topic_types.items()]
            for topic in self.reader.pose_topics:  # object names of a PoseArray: MarkerArray ns, same order
                mt = topic.rsplit("/", 1)[0] + "/markers"
                self._marker_topics[mt] = topic
                self._subs.append(node.create_subscription(_msg_class(MARKER_ARRAY), mt, self._store_names(topic),
                                                           10))
            self._pubs = {topic: node.create_publisher(self._classes[topic], topic, 10) for topic in self.writer.topics}
        self._req_topics = [t.lstrip("/") for t in self.writer.topics]
        unknown = [t for t, ty in self.reader.topic_types.items() if ty not in (JOINT_STATE, POSE_ARRAY)]
        if transport == "request" and unknown:
            raise ValueError(f"transport 'request' reads joint states and object poses only, not {unknown}")
        if transport == "standard":
            from simulation_interfaces.srv import ResetSimulation, StepSimulation

            prefix = bridge if services is None else services
            base = "" if prefix == "/" else prefix.rstrip("/")
            self._step_cli = DirectClient(node, StepSimulation, f"{base}/step_simulation",
                                          qos_profile=qos_profile_system_default)
            self._reset_cli = node.create_client(ResetSimulation, f"{base}/reset_simulation",
                                                 qos_profile=qos_profile_system_default)
            self._StepSimulation, self._ResetSimulation = StepSimulation, ResetSimulation
        else:
            self._step_cli = DirectClient(node, SimStep, f"{bridge}/step", qos_profile=qos_profile_system_default)
            self._reset_cli = node.create_client(ResetSim, f"{bridge}/reset", qos_profile=qos_profile_system_default)
        self._SimStep, self._ResetSim = SimStep, ResetSim

        self.published = 0
        self.sync_calls = 0
        self.late_commands = 0
        self.steps = 0
        self.episode_seed: Optional[int] = None
        self._sim_ns = 0
        self._wait_discovery(discovery_timeout_s)

    # ------------------------------------------------------------ ROS plumbing
    def _store(self, topic):
        def cb(msg):
            self._latest[topic] = msg
        return cb

    def _store_names(self, pose_topic):
        def cb(msg):
            self._names[pose_topic] = [m.ns for m in msg.markers]
        return cb

    def _spin_until(self, predicate, timeout: float, what: str) -> None:
        spin_until(self.executor, self.should_stop, predicate, timeout, what)

    def _wait_discovery(self, timeout: float) -> None:
        n = self.node
        self._spin_until(lambda: self._step_cli.service_is_ready() and self._reset_cli.service_is_ready(),
                         timeout, "the bridge's step and reset services (is a sim_bridge in lockstep mode running?)")
        for topic, pub in self._pubs.items():
            self._spin_until(lambda p=pub: p.get_subscription_count() >= 1, timeout, f"the bridge to subscribe {topic}")
        for topic in list(self.reader.topic_types) + list(self._marker_topics):
            self._spin_until(lambda t=topic: n.count_publishers(t) >= 1, timeout, f"a publisher of {topic}")
        self._discovered_at = time.monotonic()
        self._discovery_timeout = timeout

    def _call(self, client, request, what: str):
        fut = client.call_async(request)
        self._spin_until(fut.done, self.timeout_s, f"the response of {what}")
        if fut.exception() is not None:
            raise fut.exception()
        return fut.result()

    def _step_call(self, steps: int, command: Optional[np.ndarray] = None):
        req = self._SimStep.Request(steps=steps, with_objects=self.transport == "request" and
                                    bool(self.reader.pose_topics))
        if command is not None:
            req.command_topics = self._req_topics
            req.command_values = self.writer.request_values(command)
        r = direct_call(self._step_cli, req, self.timeout_s, self.should_stop,
                        "the response of the bridge's step service")
        if not r.success:
            raise LockstepError(f"bridge refused step({steps}): {r.message}")
        return r

    def _take_response(self, r) -> None:
        """transport 'request': the observation's sources from a step response."""
        for topic, msg_type in self.reader.topic_types.items():
            if msg_type == JOINT_STATE:
                self._latest[topic] = r.joint_state
            else:
                self._latest[topic] = SimpleNamespace(poses=r.object_poses, header=r.joint_state.header)
                self._names[topic] = list(r.object_names)

    def _wait_obs(self, target_ns: Optional[int], what: str, tol_ns: int = 0) -> None:
        """Wait until every observation topic's newest message is stamped ``target_ns`` (within
        ``tol_ns``); ``None``: any one stamp that all of them share."""
        topics = list(self.reader.topic_types)

        def stamped(t):
            if t not in self._latest:
                return False
            if target_ns is None:
                return message_stamp_ns(self._latest[t]) == message_stamp_ns(self._latest[topics[0]])
            return abs(message_stamp_ns(self._latest[t]) - target_ns) <= tol_ns

        def ready():
            return all(stamped(t) for t in topics) and all(p in self._names for p in self.reader.pose_topics)
        try:
            self._spin_until(ready, self.timeout_s, what)
        except LockstepInterrupted:
            raise   # a stop (Ctrl-C) is not a missing observation: the training node ends cleanly on it
        except LockstepError as exc:
            got = {t: (message_stamp_ns(self._latest[t]) if t in self._latest else None) for t in topics}
            raise LockstepError(f"{exc}: wanted every observation stamped {target_ns} ns, newest stamps {got}. "
                                f"The bridge must publish them every control step (publish_rate_hz and "
                                f"ground_truth_rate_hz = {self.task_cls.control_rate_hz:g})") from None

    def _raw(self) -> np.ndarray:
        raw = self.reader.read(self._latest, self._names)
        z = self.reader.pose_z(self._latest, self._names) if self._names else None
        if z is not None:
            self.task._z = z  # ball-on-plate's "fell through" check
        return raw

    # ------------------------------------------------------------ gym API
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        episode_seed = int(seed) if seed is not None else int(self.np_random.integers(0, TRAIN_SEED_LIMIT))
        self.episode_seed = episode_seed
        self._latest.clear()
        if self.transport == "standard":
            return self._reset_standard(seed, options)
        r = self._call(self._reset_cli, self._ResetSim.Request(seed=episode_seed, scene=self.task_cls.scene),
                       "the bridge's reset service")
        if not r.success:
            raise LockstepError(f"bridge reset failed: {r.message}")
        self.published = 0  # the bridge's counter restarts at 0 on reset
        self._sim_ns = stamp_ns(r.sim_time)
        self.task.sim_free_episode_start()
        if self.transport == "request":
            self._take_response(self._step_call(0))
            self.reader.reset()
            self.steps = 0
            return self._observe(self._raw()), {"episode_seed": episode_seed, "randomization": {}}
        try:
            self._wait_obs(self._sim_ns, "the observation after reset")
        except LockstepError:
            # The bridge publishes ground truth only to matched subscribers: right after start-up
            # it may not have matched ours yet. Reset again (same seed) while discovery settles.
            if time.monotonic() - self._discovered_at > self._discovery_timeout:
                raise
            return self.reset(seed=episode_seed, options=options)
        self.reader.reset()
        self.steps = 0
        return self._observe(self._raw()), {"episode_seed": episode_seed, "randomization": {}}

    def _reset_standard(self, seed, options):
        """ResetSimulation, then the observation the bridge publishes on reset (one shared stamp)."""
        self.episode_seed = None   # the standard's reset takes no seed
        r = self._call(self._reset_cli, self._ResetSimulation.Request(), "the simulator's reset_simulation service")
        if r.result.result != 1:   # simulation_interfaces/msg/Result.RESULT_OK
            raise LockstepError(f"reset_simulation refused ({r.result.result}): {r.result.error_message}")
        self.task.sim_free_episode_start()
        try:
            self._wait_obs(None, "the observation after reset_simulation")
        except LockstepError:
            if time.monotonic() - self._discovered_at > self._discovery_timeout:
                raise
            return self.reset(seed=seed, options=options)   # discovery still settling: reset again
        self._sim_ns = message_stamp_ns(self._latest[next(iter(self.reader.topic_types))])
        self.reader.reset()
        self.steps = 0
        return self._observe(self._raw()), {"episode_seed": None, "randomization": {}}

    def _step_standard(self, command):
        """Publish the command, StepSimulation(1), then the observation stamped one control period later."""
        for topic, msg in self.writer.messages(command, self._classes).items():
            self._pubs[topic].publish(msg)
            self.published += 1
        r = direct_call(self._step_cli, self._StepSimulation.Request(steps=1), self.timeout_s, self.should_stop,
                        "the response of the simulator's step_simulation service")
        if r.result.result != 1:
            raise LockstepError(f"step_simulation refused ({r.result.result}): {r.result.error_message}")
        self._wait_obs(self._sim_ns + self.period_ns, "the observation one control period after the last", tol_ns=1)
        self._sim_ns = message_stamp_ns(self._latest[next(iter(self.reader.topic_types))])

    def step(self, action):
        command = self.task.action_to_command(action)
        late = False
        if self.transport == "standard":
            self._step_standard(command)
            return self._finish_step(command, late)
        if self.transport == "request":  # the command in the request: applied before the step, never late
            self.published += len(self._req_topics)
            r = self._step_call(1, command)
        else:
            for topic, msg in self.writer.messages(command, self._classes).items():
                self._pubs[topic].publish(msg)
                self.published += 1
        if self.transport == "request":
            if r.commands_received < self.published:
                raise LockstepError(f"the bridge rejected the command {command.tolist()} carried in the step request "
                                    "(see its log: non-finite or out of range)")
        elif self.verify == "before":
            deadline = Deadline(self.sync_timeout_s)
            while self._step_call(0).commands_received < self.published:
                self.sync_calls += 1
                if deadline.expired():
                    raise LockstepError(
                        f"the bridge reports fewer accepted commands than the {self.published} published since reset "
                        f"after {self.sync_timeout_s:g} s (a command rejected as invalid, or a second publisher?)")
            r = self._step_call(1)
        else:
            r = self._step_call(1)
            late = r.commands_received < self.published
            if late:
                self.late_commands += 1
        if r.commands_received > self.published:
            raise LockstepError(f"the bridge accepted {r.commands_received} commands but this env published "
                                f"{self.published}: another node publishes on the action topics")
        target = stamp_ns(r.sim_time)
        if abs(target - self._sim_ns - self.period_ns) > 1:  # 1 ns: rounding of the stamps
            raise LockstepError(f"one step advanced sim time by {target - self._sim_ns} ns, expected {self.period_ns} "
                                f"(set the bridge's control_rate_hz to {self.task_cls.control_rate_hz:g})")
        self._sim_ns = target
        if self.transport == "request":
            self._take_response(r)
        else:
            self._wait_obs(target, "the observation stamped with the post-step sim time")
        return self._finish_step(command, late)

    def _finish_step(self, command, late: bool):
        self.steps += 1
        raw = self._raw()
        reward, terminated, info = self.task._reward_terminated(raw, command)
        truncated = not terminated and self.steps >= self.task_cls.max_episode_steps
        if terminated or truncated:
            info.setdefault("is_success", bool(truncated))
        if late:
            info["late_command"] = True
        return self._observe(raw), float(reward), bool(terminated), bool(truncated), info

    def _observe(self, raw: np.ndarray) -> np.ndarray:
        return (raw * self._obs_scale).astype(np.float32)

    def close(self) -> None:
        for s in getattr(self, "_subs", []):
            self.node.destroy_subscription(s)
        for p in getattr(self, "_pubs", {}).values():
            self.node.destroy_publisher(p)
        if getattr(self, "_step_cli", None) is not None:
            self._step_cli.destroy()
        if getattr(self, "_reset_cli", None) is not None:
            self.node.destroy_client(self._reset_cli)
        self._subs, self._pubs = [], {}
        self._step_cli = self._reset_cli = None
        if self.own_executor and self.executor is not None:
            self.executor.remove_node(self.node)
            self.executor = None
