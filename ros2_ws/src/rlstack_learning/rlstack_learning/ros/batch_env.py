"""A Stable-Baselines3 ``VecEnv`` over a ``batch_bridge``: N envs, one service round trip per batch step.

The batch bridge (``rlstack_sim.batch_bridge``) holds N simulator instances in one process.
``step_wait`` sends the commands of all N envs in one ``SimStepBatch`` request (``io.yaml``
semantics: :meth:`ActWriter.request_values`, applied by the bridge through the same validation
as the command topics) and reads all N observations from the reply: joint states and the
ground-truth object positions, turned into observation terms by the same
:class:`~rlstack_learning.ros.io.ObsReader` a topic-fed env uses. An env whose episode ends is
reset within the same call when the bridge can tell that it ended: the time limit (the client
says which envs reach it) and, for tasks whose termination is a joint-limit rule
(``end_joint_limits``: cart-pole), the limits themselves; the reply carries the terminal state
and the new episode's first state. Other endings (ball-on-plate's ball leaving the plate) are
reset in a second call. The reset observation is returned with ``info["terminal_observation"]``
set, as SB3's ``DummyVecEnv`` does.

Seeding matches ``DummyVecEnv`` of the in-process env: after ``seed(s)`` the first reset of env
i plays episode ``s + i``, and later episodes draw their seeds from each env's own generator
seeded the way ``gymnasium.Env.reset(seed=...)`` seeds it. So for the same seeds and actions the
observations, rewards and episode ends equal the in-process env's (the ball of ball-on-plate
starts at rest over ROS, as in :class:`~rlstack_learning.ros.lockstep_env.LockstepEnv`).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, List, Optional, Sequence, Union

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from rlstack_common.fast_lane import DirectClient

from ..envs import ENVS, TRAIN_SEED_LIMIT
from .io import JOINT_STATE, ActWriter, ObsReader
from .lockstep_env import LockstepError, LockstepInterrupted, direct_call, make_executor, spin_until


class BatchLockstepVecEnv(VecEnv):
    def __init__(self, task: Union[str, type], node, executor=None, bridge: str = "/batch_bridge",
                 timeout_s: float = 10.0, discovery_timeout_s: float = 30.0, randomize: Any = False,
                 should_stop: Optional[Callable[[], bool]] = None) -> None:
        from rclpy.qos import qos_profile_system_default

        from rlstack_interfaces.srv import SimStepBatch

        cls = ENVS[task] if isinstance(task, str) else task
        if randomize:
            raise ValueError("domain randomisation is not available over ROS (masses/friction need the simulator)")
        self.task_cls, self.node, self.timeout_s = cls, node, float(timeout_s)
        self.should_stop = should_stop or (lambda: False)
        self.own_executor = executor is None
        self.executor = executor or make_executor(node.context)
        if self.own_executor:
            self.executor.add_node(node)
        self._SimStepBatch = SimStepBatch
        self.round_trips = 0
        self.auto_resets = 0        # episodes the bridge ended and reset inside a step call
        self.reset_calls = 0        # second calls for episodes it could not end itself
        self._end_joints = list(cls.end_joint_limits)
        self._end_limits = [float(cls.end_joint_limits[j]) for j in self._end_joints]
        self._cli = DirectClient(node, SimStepBatch, f"{bridge}/step", qos_profile=qos_profile_system_default)
        self._spin_until(self._cli.service_is_ready, discovery_timeout_s,
                         f"the batch bridge's step service {bridge}/step (is a batch_bridge running?)")
        first = self._call(steps=0)
        n = len(first.sim_time)
        self.writer = ActWriter(cls.act_terms)
        self._topics = [t.lstrip("/") for t in self.writer.topics]
        self.readers = [ObsReader(cls.obs_terms, cls.control_rate_hz) for _ in range(n)]
        if self.readers[0].pose_topics and not len(first.object_names):
            raise LockstepError(f"{cls.env_id} reads object poses but the batch bridge {bridge} answers without them: "
                                "start it with with_objects:=true (its default)")
        unreadable = [t.name for t in self.readers[0].terms if t.kind == "tf" or t.field == "orientation"]
        if unreadable:
            raise ValueError(f"a batch bridge's response carries joint states and object positions only, not what "
                             f"{unreadable} read: train {cls.env_id} on single lockstep bridges (transport 'topics')")
        self._joint_topics = [t for t, ty in self.readers[0].topic_types.items() if ty == JOINT_STATE]
        self._pose_topics = self.readers[0].pose_topics
        self.tasks = [object.__new__(cls) for _ in range(n)]  # sim-free: reward/termination hooks, action mapping
        # Joint-state-only tasks (cart-pole): all N raw observations at once from the response's
        # arrays (column sums per term), instead of a message view and an ObsReader call per env:
        # at cart-pole's physics cost the per-env Python work was most of a batch step.
        self._joint_only = all(t.kind == "joint" for t in self.readers[0].terms)
        # one Float64 topic per action term, in term order: the request values are the commands themselves
        self._plain_float_actions = (not cls.discrete and list(self.writer.topics.values()) ==
                                     ["std_msgs/msg/Float64"] * len(cls.act_terms) and
                                     [sl[0] for sl in self.writer.slots] == list(self.writer.topics))
        self._act_offset = np.array([t.offset for t in cls.act_terms], dtype=np.float64)
        self._act_scale = np.array([t.scale for t in cls.act_terms], dtype=np.float64)
        self._act_lo = np.array([t.limits[0] for t in cls.act_terms], dtype=np.float64)
        self._act_hi = np.array([t.limits[1] for t in cls.act_terms], dtype=np.float64)
        self._columns: Optional[tuple] = None   # (joint names, [(field, column indices)] per term)
        self._obs_scale = np.array([t.scale for t in cls.obs_terms], dtype=np.float64)
        obs_space = gym.spaces.Box(-np.inf, np.inf, shape=(len(cls.obs_terms),), dtype=np.float32)
        act_space = (gym.spaces.Discrete(len(cls.act_terms[0].choices)) if cls.discrete
                     else gym.spaces.Box(-1.0, 1.0, shape=(len(cls.act_terms),), dtype=np.float32))
        super().__init__(n, obs_space, act_space)
        self._rngs: List[Optional[np.random.Generator]] = [None] * n
        self._next_seed: List[Optional[int]] = [None] * n   # drawn ahead for an auto-reset, not yet used
        self.episode_seeds: List[Optional[int]] = [None] * n
        self.steps = np.zeros(n, dtype=np.int64)
        self.published = np.zeros(n, dtype=np.int64)
        self._actions: Optional[np.ndarray] = None
        self.render_mode = None

    # ------------------------------------------------------------ ROS plumbing
    def _spin_until(self, predicate, timeout: float, what: str) -> None:
        spin_until(self.executor, self.should_stop, predicate, timeout, what)

    def _call(self, steps: int, values: Sequence[float] = (), reset_seeds: Sequence[int] = (),
              auto_reset_seeds: Sequence[int] = (), end_episode: Sequence[bool] = ()):
        req = self._SimStepBatch.Request(steps=steps, reset_seeds=[int(s) for s in reset_seeds])
        if len(auto_reset_seeds):
            req.auto_reset_seeds = [int(s) for s in auto_reset_seeds]
            req.end_episode = [bool(e) for e in end_episode]
            req.end_joints = self._end_joints
            req.end_abs_limits = self._end_limits
        if len(values):
            req.command_topics = self._topics
            req.command_values = np.asarray(values, dtype=np.float64).ravel()
        r = direct_call(self._cli, req, self.timeout_s, self.should_stop, "the batch bridge's step response")
        self.round_trips += 1
        if not r.success:
            raise LockstepError(f"batch bridge refused the call: {r.message}")
        return r

    def _raw(self, r, i: int, env: Optional[int] = None) -> np.ndarray:
        """Row ``i``'s raw observation from a response (the ObsReader's message views), read by env
        ``env`` (default ``i``; the rows of a response's auto-reset states are a subset of the envs)."""
        env = i if env is None else env
        nj, no = len(r.joint_names), len(r.object_names)
        msgs = {}
        names = {}
        if self._joint_topics:
            sl = slice(i * nj, (i + 1) * nj)
            js = SimpleNamespace(name=list(r.joint_names), position=r.joint_position[sl],
                                 velocity=r.joint_velocity[sl], effort=r.joint_effort[sl])
            msgs.update({t: js for t in self._joint_topics})
        if self._pose_topics:
            pos = np.asarray(r.object_position).reshape(-1, no, 3)[i]
            poses = SimpleNamespace(poses=[SimpleNamespace(position=SimpleNamespace(x=p[0], y=p[1], z=p[2]))
                                           for p in pos.tolist()])
            for t in self._pose_topics:
                msgs[t], names[t] = poses, list(r.object_names)
        raw = self.readers[env].read(msgs, names)
        if names:
            self.tasks[env]._z = self.readers[env].pose_z(msgs, names)  # ball-on-plate's "fell through" check
        return raw

    def _raw_all(self, r, envs: Optional[Sequence[int]] = None) -> np.ndarray:
        """The raw observations (rows x terms) of a response whose rows are ``envs`` (default: every
        env); joint-only tasks in one go."""
        envs = range(self.num_envs) if envs is None else envs
        if not self._joint_only:
            return np.stack([self._raw(r, row, env) for row, env in enumerate(envs)])
        names = tuple(r.joint_names)
        if self._columns is None or self._columns[0] != names:
            index = {n: j for j, n in enumerate(names)}
            self._columns = (names, [(t.field, [index[k] for k in t.keys]) for t in self.readers[0].terms])
        nj = len(names)
        arrays = {f: np.asarray(getattr(r, f"joint_{f}"), dtype=np.float64).reshape(len(envs), nj)
                  for f in {field for field, _ in self._columns[1]}}
        raw = np.empty((len(envs), len(self._columns[1])))
        for k, (field, cols) in enumerate(self._columns[1]):
            raw[:, k] = arrays[field][:, cols[0]] if len(cols) == 1 else arrays[field][:, cols].sum(axis=1)
        return raw

    def _observe(self, raw: np.ndarray) -> np.ndarray:
        return (raw * self._obs_scale).astype(np.float32)

    def _episode_seed(self, i: int, seed: Optional[int]) -> int:
        """As ``gymnasium.Env.reset(seed=...)`` then ``LockstepEnv.reset``: a given seed re-seeds env i's
        generator and is the episode seed; otherwise the next episode seed is drawn from it."""
        if seed is not None:
            self._rngs[i], _ = seeding.np_random(int(seed))
            self._next_seed[i] = None
            return int(seed)
        drawn, self._next_seed[i] = self._peek_seed(i), None
        return drawn

    def _peek_seed(self, i: int) -> int:
        """Env i's next episode seed, drawn once and kept until an episode uses it: the generator
        serves nothing else, so drawing it ahead (for an auto-reset) keeps the sequence unchanged."""
        if self._next_seed[i] is None:
            if self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random()
            self._next_seed[i] = int(self._rngs[i].integers(0, TRAIN_SEED_LIMIT))
        return self._next_seed[i]

    def _reset_envs(self, which: Sequence[int], seeds: Sequence[Optional[int]]):
        reset_seeds = [-1] * self.num_envs
        for i, s in zip(which, seeds):
            reset_seeds[i] = self.episode_seeds[i] = self._episode_seed(i, s)
        return self._start_episodes(self._call(0, (), reset_seeds), range(self.num_envs), which)

    def _start_episodes(self, r, row_envs: Sequence[int], which: Sequence[int]) -> dict:
        """Start the episodes of envs ``which`` (the task's and the reader's state, the counters, the
        reset infos) and return their first observations from response ``r``, whose rows belong to
        envs ``row_envs`` (every env for a reset call; the auto-reset envs for ``reset_*`` rows)."""
        row = {env: k for k, env in enumerate(row_envs)}
        for i in which:
            self.tasks[i].sim_free_episode_start()
            self.readers[i].reset()
            self.steps[i] = 0
            self.published[i] = 0
            self.reset_infos[i] = {"episode_seed": self.episode_seeds[i], "randomization": {}}
        raws = self._raw_all(r, row_envs) if self._joint_only else None
        return {i: self._observe(raws[row[i]] if raws is not None else self._raw(r, row[i], i)) for i in which}

    # ------------------------------------------------------------ VecEnv API
    def reset(self):
        seeds = [self._seeds[i] if self._seeds else None for i in range(self.num_envs)]
        obs = self._reset_envs(range(self.num_envs), seeds)
        self._reset_seeds()
        self._reset_options()
        return np.stack([obs[i] for i in range(self.num_envs)])

    def _commands(self, actions: np.ndarray):
        """(commands per env, request values N x k). Continuous tasks whose action terms each fill one
        Float64 topic (cart-pole) in one go: the same float64 arithmetic as ``action_to_command``
        (clip, offset + scale * a, clip to the limits) on the whole batch; the others env by env."""
        if self._plain_float_actions:
            a = np.clip(np.asarray(actions, dtype=np.float64).reshape(self.num_envs, -1), -1.0, 1.0)
            cmd = np.clip(self._act_offset + self._act_scale * a, self._act_lo, self._act_hi)
            return list(cmd), cmd
        commands = [task.action_to_command(a) for task, a in zip(self.tasks, actions)]
        return commands, np.asarray([self.writer.request_values(c) for c in commands], dtype=np.float64)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        if self.should_stop():
            raise LockstepInterrupted("stopped before a batch step")
        commands, values = self._commands(self._actions)
        auto_seeds = [self._peek_seed(i) for i in range(self.num_envs)]
        time_up = (self.steps + 1 >= self.task_cls.max_episode_steps).tolist()
        r = self._call(1, np.asarray(values, dtype=np.float64), auto_reset_seeds=auto_seeds, end_episode=time_up)
        self.published += len(self._topics)
        got = np.asarray(r.commands_received, dtype=np.int64)
        if np.any(got != self.published):
            bad = int(np.flatnonzero(got != self.published)[0])
            raise LockstepError(f"env {bad}: the batch bridge counted {got[bad]} accepted commands, this env sent "
                                f"{self.published[bad]} (a command rejected as non-finite or out of range?)")
        obs = np.zeros((self.num_envs,) + self.observation_space.shape, dtype=np.float32)
        rewards = np.zeros(self.num_envs, dtype=np.float32)
        dones = np.zeros(self.num_envs, dtype=bool)
        infos: List[dict] = [{} for _ in range(self.num_envs)]
        ended = []
        raws = self._raw_all(r)
        obs[:] = (raws * self._obs_scale).astype(np.float32)
        self.steps += 1
        for i in range(self.num_envs):
            reward, terminated, info = self.tasks[i]._reward_terminated(raws[i], commands[i])
            truncated = not terminated and self.steps[i] >= self.task_cls.max_episode_steps
            if terminated or truncated:
                info.setdefault("is_success", bool(truncated))
                ended.append(i)
            info["TimeLimit.truncated"] = bool(truncated)
            rewards[i], dones[i], infos[i] = reward, terminated or truncated, info
        auto = np.asarray(r.auto_reset, dtype=bool) if len(r.auto_reset) else np.zeros(self.num_envs, dtype=bool)
        wrong = sorted(set(np.flatnonzero(auto).tolist()) - set(ended))
        if wrong:
            raise LockstepError(f"the batch bridge ended env {wrong[0]}'s episode but {self.task_cls.env_id} did not "
                                f"terminate it (end_joint_limits {self.task_cls.end_joint_limits} must be exactly "
                                "its termination rule)")
        fresh = self._auto_reset_envs(r, np.flatnonzero(auto).tolist()) if auto.any() else {}
        second = [i for i in ended if not auto[i]]
        if second:  # endings the bridge could not see: reset in a second call
            self.reset_calls += 1
            fresh.update(self._reset_envs(second, [None] * len(second)))
        for i in ended:  # as DummyVecEnv: the returned observation is the next episode's first
            infos[i]["terminal_observation"] = obs[i].copy()
            obs[i] = fresh[i]
        return obs, rewards, dones, infos

    def _auto_reset_envs(self, r, which: List[int]) -> dict:
        """The envs the bridge reset inside the step call: their episodes started, their first
        observations from the reply's ``reset_*`` rows."""
        for i in which:
            self.episode_seeds[i] = self._episode_seed(i, None)   # the seed sent as its auto_reset_seed
        view = SimpleNamespace(joint_names=r.joint_names, object_names=r.object_names,
                               joint_position=r.reset_joint_position, joint_velocity=r.reset_joint_velocity,
                               joint_effort=r.reset_joint_effort, object_position=r.reset_object_position)
        self.auto_resets += len(which)
        return self._start_episodes(view, which, which)

    def close(self) -> None:
        if self._cli is not None:
            self._cli.destroy()
            self._cli = None
        if self.own_executor and self.executor is not None:
            self.executor.remove_node(self.node)
            self.executor = None

    def _indices_list(self, indices) -> List[int]:
        return list(self._get_indices(indices))

    def get_attr(self, attr_name: str, indices=None) -> List[Any]:
        return [getattr(self.tasks[i], attr_name, getattr(self, attr_name, None)) for i in self._indices_list(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        for i in self._indices_list(indices):
            setattr(self.tasks[i], attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> List[Any]:
        raise NotImplementedError(f"env_method({method_name!r}): the envs live in the batch bridge process")

    def env_is_wrapped(self, wrapper_class, indices=None) -> List[bool]:
        return [False for _ in self._indices_list(indices)]
