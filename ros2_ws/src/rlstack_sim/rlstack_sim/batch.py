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

from dataclasses import dataclass
from typing import Callable, List, Sequence

import numpy as np

from rlstack_sim.commands import VelocityLimiter
from rlstack_sim.config import ConfigError
from rlstack_sim.core import (CommandHandler, Stepper, apply_request_commands, apply_reset, make_backend,
                              plan_request_commands)

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


class BatchSims:
    """``num_envs`` instances of ``scene`` on ``backend``; env i starts from ``seed + i``.

    :param limits: (max_linear_speed, max_angular_speed, max_linear_accel, max_angular_accel)
    """

    def __init__(self, backend: str, scene: str, num_envs: int, seed: int, physics_rate_hz: float,
                 control_rate_hz: float, command_timeout_s: float, max_ee_step: float,
                 limits: Sequence[float], info: Callable[[str], None], warning: Callable[[str], None]) -> None:
        from sim_bridges import Capability, make_scene

        if not 1 <= num_envs <= MAX_ENVS:
            raise ConfigError(f"num_envs must be 1..{MAX_ENVS}, got {num_envs}")
        self.scene, self.period = scene, 1.0 / control_rate_hz
        self.sims, self.handlers, self.steppers = [], [], []
        spec = make_scene(scene)
        for i in range(num_envs):
            sim = make_backend(backend, scene, physics_rate_hz=physics_rate_hz, control_rate_hz=control_rate_hz)
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

    @property
    def num_envs(self) -> int:
        return len(self.sims)

    def step(self, steps: int, command_topics: Sequence[str], command_values: Sequence[float],
             reset_seeds: Sequence[int]) -> str:
        """One batched call: env i is reset with ``reset_seeds[i]`` (>= 0), or gets its slice of
        ``command_values`` and advances ``steps`` control steps. Returns '' or why the call was
        refused (nothing applied then) or why a reset failed."""
        n = self.num_envs
        if len(reset_seeds) not in (0, n):
            return f"reset_seeds has {len(reset_seeds)} entries, expected 0 or {n} (one per env)"
        refused, plan = "", []
        if command_topics or len(command_values):
            refused, plan = plan_request_commands(list(command_topics), len(command_values), self.channels, n)
        if refused:
            return refused
        k = sum(a for _, a in plan)
        failed = []
        for i, (sim, handler, stepper) in enumerate(zip(self.sims, self.handlers, self.steppers)):
            if len(reset_seeds) and reset_seeds[i] >= 0:
                why = apply_reset(sim, self.scene, lambda: self.scene, int(reset_seeds[i]), (), lambda *a: None)
                handler.reset()
                stepper.reset()
                if why:
                    failed.append(f"env {i}: {why}")
                continue
            if plan:
                apply_request_commands(handler, plan, command_values[i * k:(i + 1) * k])
            if steps > 0:
                stepper.run(int(steps), lambda: None)
        return "; ".join(failed)

    def state(self, with_objects: bool = True) -> BatchState:
        """Every env's state after a call; ``with_objects=False`` leaves the ground-truth objects out
        (a third of a cart-pole call's time went into reading poses its training never used)."""
        js = [sim.joint_state() for sim in self.sims]
        names = list(self.object_names) if with_objects else []
        gt = [sim.ground_truth() for sim in self.sims] if names else [{} for _ in self.sims]
        m = len(names)
        pos = np.zeros((self.num_envs, m, 3))
        quat = np.zeros((self.num_envs, m, 4))
        for i, objects in enumerate(gt):
            for j, name in enumerate(names):
                pos[i, j] = objects[name].pose.position
                quat[i, j] = objects[name].pose.orientation
        return BatchState(
            sim_time=np.array([sim.sim_time for sim in self.sims]),
            commands_received=[h.commands_received for h in self.handlers],
            joint_names=self.joint_names,
            joint_position=np.stack([j.position for j in js]) if self.joint_names else np.zeros((self.num_envs, 0)),
            joint_velocity=np.stack([j.velocity for j in js]) if self.joint_names else np.zeros((self.num_envs, 0)),
            joint_effort=np.stack([j.effort for j in js]) if self.joint_names else np.zeros((self.num_envs, 0)),
            object_names=names, object_position=pos, object_orientation=quat)

    def close(self) -> None:
        for sim in self.sims:
            try:
                sim.close()
            except Exception:  # noqa: BLE001 - shutting down anyway
                pass
