"""Batched lockstep (pure Python, no rclpy): N simulator instances of one scene, stepped together.

What :mod:`rlstack_sim.batch_bridge` serves on its ``~/step`` service (``SimStepBatch``): one
call carries the commands of all N envs and answers with all N states, so a vectorised training
env over ROS costs one round trip per batch step instead of one per env per step.

Each instance is what a lockstep ``sim_bridge`` runs: its own backend (a PyBullet world per
env), :class:`~rlstack_sim.core.CommandHandler` (validation, limits, counters, the watchdog on
sim time) and :class:`~rlstack_sim.core.Stepper` in lockstep mode; resets go through
:func:`~rlstack_sim.core.apply_reset`. The same seed gives the same state as a ``sim_bridge``
(and the in-process env) with that seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import numpy as np

from rlstack_sim.commands import VelocityLimiter
from rlstack_sim.config import ConfigError
from rlstack_sim.core import (
    CommandHandler,
    Stepper,
    apply_request_commands,
    apply_reset,
    make_backend,
    plan_request_commands,
)

__all__ = ["BatchSims", "BatchState", "MAX_ENVS"]

#: most simulator instances one batch bridge holds
MAX_ENVS = 256


@dataclass
class BatchState:
    """All envs' state after a call, as flat env-major arrays (the SimStepBatch response)."""
    sim_time: np.ndarray           # (N,)
    commands_received: List[int]   # N
    joint_names: List[str]
    joint_position: np.ndarray     # (N, J)
    joint_velocity: np.ndarray
    joint_effort: np.ndarray
    object_names: List[str]
    object_position: np.ndarray    # (N, M, 3)
    object_orientation: np.ndarray  # (N, M, 4)
    #: (N,) envs auto-reset by the call (empty if none was asked for); the arrays above then hold
    #: their terminal state, and ``reset`` (a BatchState of R envs, env order) the new episode's first
    auto_reset: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    reset: Optional["BatchState"] = None


class BatchSims:
    """``num_envs`` instances of ``scene`` on ``backend``; env i starts from ``seed + i``.

    :param limits: (max_linear_speed, max_angular_speed, max_linear_accel, max_angular_accel)
    :param reset_mode: PyBullet's reset: ``"rebuild"`` (the world rebuilt, bitwise like a fresh one;
        ~3 ms for cart-pole) or ``"snapshot"`` (a saved state restored, sub-millisecond; exact for
        contact-free scenes such as cart-pole, the in-process env's choice there). Other engines
        reset exactly either way.
    """

    def __init__(self, backend: str, scene: str, num_envs: int, seed: int, physics_rate_hz: float,
                 control_rate_hz: float, command_timeout_s: float, max_ee_step: float,
                 limits: Sequence[float], info: Callable[[str], None], warning: Callable[[str], None],
                 reset_mode: str = "rebuild") -> None:
        from sim_bridges import Capability, make_scene

        if not 1 <= num_envs <= MAX_ENVS:
            raise ConfigError(f"num_envs must be 1..{MAX_ENVS}, got {num_envs}")
        self.scene, self.period = scene, 1.0 / control_rate_hz
        self.sims, self.handlers, self.steppers = [], [], []
        spec = make_scene(scene)
        for i in range(num_envs):
            extra = {"reset_mode": reset_mode} if backend == "pybullet" else {}
            sim = make_backend(backend, scene, physics_rate_hz=physics_rate_hz, control_rate_hz=control_rate_hz,
                               **extra)
            sim.load_scene(scene, seed=seed + i)
            handler = CommandHandler(sim, VelocityLimiter(*limits), command_timeout_s, max_ee_step,
                                     lambda s=sim: s.sim_time, info, warning)
            handler.configure(spec, sim.joint_limits(), sim.capabilities, Capability)
            stepper = Stepper(sim, handler, "lockstep", self.period, None, None, None, False)
            handler.reset()
            self.sims.append(sim)
            self.handlers.append(handler)
            self.steppers.append(stepper)
        self.channels = self.handlers[0].channels
        self.joint_names = list(self.sims[0].joint_names)
        self.object_names = sorted(self.sims[0].ground_truth())
        # Every env's joint state, one row per env, written in place after each env's part of a call
        # (SimBackend.read_joint_state_into): building a JointState per env per call and stacking
        # them was a fifth of a cart-pole call. The reset_* rows hold the first state of the envs a
        # call auto-reset (the rows above keep their terminal state until the next call).
        shape = (num_envs, len(self.joint_names))
        self._rows = tuple(np.zeros(shape) for _ in range(3))         # position, velocity, effort
        self._reset_rows = tuple(np.zeros(shape) for _ in range(3))
        for i in range(num_envs):
            self._read(i, self._rows)
        self._terminal: dict = {}   # env -> (objects, commands, sim time) before its auto-reset
        self._auto = np.zeros(0, dtype=bool)

    @property
    def num_envs(self) -> int:
        return len(self.sims)

    def _read(self, i: int, rows: tuple) -> None:
        self.sims[i].read_joint_state_into(rows[0][i], rows[1][i], rows[2][i])

    def _settle(self) -> None:
        """Before a call: the envs the last call auto-reset now report their new episode's state."""
        if self._auto.any():
            envs = np.flatnonzero(self._auto)
            for rows, fresh in zip(self._rows, self._reset_rows):
                rows[envs] = fresh[envs]
        self._terminal = {}
        self._auto = np.zeros(0, dtype=bool)

    def step(self, steps: int, command_topics: Sequence[str], command_values: Sequence[float],
             reset_seeds: Sequence[int], auto_reset_seeds: Sequence[int] = (), end_episode: Sequence[bool] = (),
             end_joints: Sequence[str] = (), end_abs_limits: Sequence[float] = ()) -> str:
        """One batched call: env i is reset with ``reset_seeds[i]`` (>= 0), or gets its slice of
        ``command_values`` and advances ``steps`` control steps. Then, as a VecEnv auto-resets, an env
        with ``auto_reset_seeds[i] >= 0`` whose episode ended (``end_episode[i]``, or the |position|
        of an ``end_joints`` joint beyond its ``end_abs_limits``) is reset with that seed; its terminal
        state is kept for :meth:`state`. Returns '' or why the call was refused (nothing applied then)
        or why a reset failed."""
        n = self.num_envs
        self._settle()
        for name, arr in (("reset_seeds", reset_seeds), ("auto_reset_seeds", auto_reset_seeds),
                          ("end_episode", end_episode)):
            if len(arr) not in (0, n):
                return f"{name} has {len(arr)} entries, expected 0 or {n} (one per env)"
        if len(end_joints) != len(end_abs_limits):
            return f"end_joints has {len(end_joints)} entries but end_abs_limits {len(end_abs_limits)}"
        if not all(np.isfinite(x) and x >= 0 for x in end_abs_limits):
            return f"end_abs_limits must be finite and >= 0, got {list(end_abs_limits)}"
        unknown = [j for j in end_joints if j not in self.joint_names]
        if unknown:
            return (f"end_joints {unknown} are not joints of scene '{self.scene}' "
                    f"(it has: {', '.join(self.joint_names)})")
        refused, plan = "", []
        if command_topics or len(command_values):
            refused, plan = plan_request_commands(list(command_topics), len(command_values), self.channels, n)
        if refused:
            return refused
        k = sum(a for _, a in plan)
        # (index, limit) pairs, checked in plain Python: a handful of numpy calls per env cost more
        ends = [(self.joint_names.index(j), float(lim)) for j, lim in zip(end_joints, end_abs_limits)]
        auto = np.zeros(n if len(auto_reset_seeds) else 0, dtype=bool)
        position = self._rows[0]
        failed = []
        for i, (sim, handler, stepper) in enumerate(zip(self.sims, self.handlers, self.steppers)):
            if len(reset_seeds) and reset_seeds[i] >= 0:
                failed += self._reset(i, int(reset_seeds[i]))
                self._read(i, self._rows)
                continue
            if plan:
                apply_request_commands(handler, plan, command_values[i * k:(i + 1) * k])
            if steps > 0:
                stepper.run(int(steps), lambda: None)
            self._read(i, self._rows)
            if len(auto_reset_seeds) and auto_reset_seeds[i] >= 0:
                row = position[i]
                ended = bool(len(end_episode) and end_episode[i]) or any(abs(row[j]) > lim for j, lim in ends)
                if ended:
                    self._terminal[i] = (sim.ground_truth() if self.object_names else {}, handler.commands_received,
                                         sim.sim_time)
                    auto[i] = True
                    failed += self._reset(i, int(auto_reset_seeds[i]))
                    self._read(i, self._reset_rows)
        self._auto = auto
        return "; ".join(failed)

    def _reset(self, i: int, seed: int) -> List[str]:
        why = apply_reset(self.sims[i], self.scene, lambda: self.scene, seed, (), lambda *a: None)
        self.handlers[i].reset()
        self.steppers[i].reset()
        return [f"env {i}: {why}"] if why else []

    def state(self, with_objects: bool = True) -> BatchState:
        """Every env's state after a call; ``with_objects=False`` leaves the ground-truth objects out
        (a third of a cart-pole call's time went into reading poses its training never used).
        Envs the call auto-reset report their terminal state, and ``reset`` their new first state."""
        names = list(self.object_names) if with_objects else []
        envs = range(self.num_envs)
        kept = [self._terminal.get(i) for i in envs]
        current = self._state(
            envs, self._rows, names,
            sim_time=[k[2] if k else self.sims[i].sim_time for i, k in zip(envs, kept)],
            commands=[k[1] if k else self.handlers[i].commands_received for i, k in zip(envs, kept)],
            objects=[k[0] if k else self.sims[i].ground_truth() for i, k in zip(envs, kept)] if names else [])
        current.auto_reset = self._auto
        if self._auto.any():
            fresh = np.flatnonzero(self._auto).tolist()
            current.reset = self._state(
                fresh, self._reset_rows, names, sim_time=[self.sims[i].sim_time for i in fresh],
                commands=[self.handlers[i].commands_received for i in fresh],
                objects=[self.sims[i].ground_truth() for i in fresh] if names else [])
        return current

    def _state(self, envs: Sequence[int], rows: tuple, names: List[str], sim_time: List[float],
               commands: List[int], objects: List[dict]) -> BatchState:
        """A BatchState of ``envs``: their joint rows (copied), and the objects ``names`` from
        ``objects`` (one ground-truth dict per env)."""
        index = list(envs)
        n, m = len(index), len(names)
        pos = np.zeros((n, m, 3))
        quat = np.zeros((n, m, 4))
        for i, gt in enumerate(objects):
            for j, name in enumerate(names):
                pos[i, j] = gt[name].pose.position
                quat[i, j] = gt[name].pose.orientation
        return BatchState(
            sim_time=np.array(sim_time, dtype=np.float64), commands_received=commands,
            joint_names=self.joint_names,
            joint_position=rows[0][index], joint_velocity=rows[1][index], joint_effort=rows[2][index],
            object_names=names, object_position=pos, object_orientation=quat)

    def close(self) -> None:
        for sim in self.sims:
            try:
                sim.close()
            except Exception:  # noqa: BLE001 - shutting down anyway
                pass
